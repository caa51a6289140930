"""A bad KANDEV_* value stops start-up with a message naming the variable, before any prompt
runs."""

from __future__ import annotations

import json
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


BAD_VALUES = [
    ("KANDEV_RETRY_MAX_ATTEMPTS", "lots"),
    ("KANDEV_RETRY_DELAYS", "5,ten"),
    ("KANDEV_RETRY_JITTER", "2"),
    ("KANDEV_RETRY_DEADLINE", "-1"),
    ("KANDEV_RETRY_TURN_CAP", "60"),  # shorter than one call's deadline
    ("KANDEV_RETRY_TURN_CAP", "forever"),
    ("KANDEV_FIRST_CHUNK_TIMEOUT", "0"),
    ("KANDEV_IDLE_TIMEOUT", "soon"),
    ("KANDEV_NO_PROGRESS_TIMEOUT", "7200"),
    ("KANDEV_STREAM_FLUSH_INTERVAL", "often"),
    ("KANDEV_STREAM_FLUSHES_PER_S", "-1"),
    ("KANDEV_STREAM_FLUSHES_PER_S", "nan"),
    ("KANDEV_WORKER_PROCESSES", "0"),
    ("KANDEV_WORKER_PROCESSES", "two"),
    ("KANDEV_WS_QUIET_CHECK_S", "0"),
    ("KANDEV_AGENT_NODE", "node"),
    ("KANDEV_AGENT_EXIT_GRACE_S", "-1"),
    ("KANDEV_AGENT_EXIT_GRACE_S", "soon"),
    ("KANDEV_CIRCUIT_FAILURES", "0"),
    ("KANDEV_CIRCUIT_OPEN_S", "soon"),
    ("KANDEV_RETRY_BUDGET_RATIO", "2"),
    ("KANDEV_BROKER_URL", "kafka://127.0.0.1:9092"),
    ("KANDEV_METRICS_TOKEN", "short"),
    ("KANDEV_LOG_FORMAT", "xml"),
    ("KANDEV_REDIS_PREFIX", "two words"),
    ("KANDEV_DB_POOL_MAX", "-1"),
    ("KANDEV_DB_POOL_MAX", "many"),
    ("KANDEV_DB_POOL_TIMEOUT", "0"),
    ("KANDEV_USER_MAX_RUNNING", "-2"),
    ("KANDEV_ACP_MAX_AGENTS", "0"),
    ("KANDEV_ACP_MIN_FREE_MB", "-5"),
    ("KANDEV_ACP_SLOT_WAIT_S", "0"),
]

# One interpreter loads the settings module afresh for each value (with the project's own modules
# forgotten in between, so none keeps what an earlier environment said): a `manage.py check` per
# value cost 2.5 s each, most of the module's time, for what is the same module-level parse.
LOAD_EACH = """
import importlib, json, os, sys
base = dict(os.environ)
verdicts = []
for name, value in [(None, None)] + json.loads(sys.argv[1]):
    os.environ.clear()
    os.environ.update(base if name is None else {**base, name: value})
    for module in [m for m in sys.modules if m.split(".")[0] == "kandev_web"]:
        del sys.modules[module]
    try:
        importlib.import_module("kandev_web.settings")
        verdicts.append("started")
    except Exception as error:
        verdicts.append(f"{type(error).__name__}: {error}")
print(json.dumps(verdicts))
"""


@pytest.fixture(scope="module")
def verdicts() -> dict[tuple[str, str], str]:
    result = subprocess.run(
        [sys.executable, "-c", LOAD_EACH, json.dumps(BAD_VALUES)],
        cwd=settings.BASE_DIR,
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    control, *rest = json.loads(result.stdout.strip().splitlines()[-1])
    # The same loop with nothing bad must start, or every verdict below would be vacuous.
    assert control == "started", control
    return dict(zip(map(tuple, BAD_VALUES), rest, strict=True))


@pytest.mark.parametrize(("name", "value"), BAD_VALUES)
def test_a_bad_value_stops_start_up_and_names_the_variable(verdicts, name, value):
    verdict = verdicts[(name, value)]

    assert verdict.startswith("ImproperlyConfigured"), verdict
    assert name in verdict


def test_manage_py_itself_stops_on_a_bad_value_with_the_message():
    result = start_up(KANDEV_RETRY_JITTER="2")

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "KANDEV_RETRY_JITTER" in result.stderr


def test_good_values_start_and_reach_the_ladder_as_parsed_settings():
    result = start_up(KANDEV_RETRY_DELAYS="1,2", KANDEV_RETRY_MAX_ATTEMPTS="3")

    assert result.returncode == 0, result.stderr
    assert isinstance(settings.KANDEV_RETRY, RetrySettings)


def test_rabbitmq_as_the_broker_starts_and_drops_redis_only_options():
    code = (
        "from django.conf import settings;"
        "print(settings.CELERY_BROKER_URL, settings.KANDEV_BROKER_IS_RABBITMQ,"
        " settings.CELERY_BROKER_TRANSPORT_OPTIONS, settings.CELERY_TASK_ACKS_LATE)"
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=settings.BASE_DIR,
        env={**os.environ, "KANDEV_BROKER_URL": "amqp://guest:guest@127.0.0.1:5672/kandev"},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].split() == [
        "amqp://guest:guest@127.0.0.1:5672/kandev", "True", "{}", "True",
    ]  # fmt: skip
