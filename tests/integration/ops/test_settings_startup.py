"""A bad KANDEV_* value stops start-up with a message naming the variable, before any prompt runs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.conf import settings

from recovery.budget import RetrySettings


def start_up(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=settings.BASE_DIR,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("KANDEV_RETRY_MAX_ATTEMPTS", "lots"),
        ("KANDEV_RETRY_DELAYS", "5,ten"),
        ("KANDEV_RETRY_JITTER", "2"),
        ("KANDEV_RETRY_DEADLINE", "-1"),
        ("KANDEV_STREAM_FLUSH_INTERVAL", "often"),
        ("KANDEV_AGENT_NODE", "node"),
        ("KANDEV_AGENT_EXIT_GRACE_S", "-1"),
        ("KANDEV_AGENT_EXIT_GRACE_S", "soon"),
        ("KANDEV_DB_POOL_MAX", "-1"),
        ("KANDEV_DB_POOL_MAX", "many"),
        ("KANDEV_DB_POOL_TIMEOUT", "0"),
        ("KANDEV_USER_MAX_RUNNING", "-2"),
        ("KANDEV_ACP_MAX_AGENTS", "0"),
        ("KANDEV_ACP_MIN_FREE_MB", "-5"),
        ("KANDEV_ACP_SLOT_WAIT_S", "0"),
    ],
)
def test_a_bad_value_stops_start_up_and_names_the_variable(name, value):
    result = start_up(**{name: value})

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert name in result.stderr


def test_good_values_start_and_reach_the_ladder_as_parsed_settings():
    result = start_up(KANDEV_RETRY_DELAYS="1,2", KANDEV_RETRY_MAX_ATTEMPTS="3")

    assert result.returncode == 0, result.stderr
    assert isinstance(settings.KANDEV_RETRY, RetrySettings)
