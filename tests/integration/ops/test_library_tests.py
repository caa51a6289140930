"""The recovery library's unit tests need no Django, database or Redis (`make test-unit`); any
other selection still loads the settings and stops on a missing service."""

from __future__ import annotations

import os
import subprocess
import sys

from devtools.processes import ROOT


def pytest_without_services(*args: str, state_dir) -> subprocess.CompletedProcess:
    env = {
        key: value for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")
    }  # fmt: skip
    env["KANDEV_STATE_DIR"] = str(state_dir)  # and no services.env of a running `make run`
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_the_library_tests_run_with_no_services_configured(tmp_path):
    result = pytest_without_services(
        "tests/unit/recovery/test_budget.py", "tests/unit/acp/test_evidence.py", state_dir=tmp_path
    )

    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert " passed" in result.stdout


def test_tests_of_the_app_still_stop_on_a_missing_database_url(tmp_path):
    result = pytest_without_services("tests/unit/core", "--collect-only", state_dir=tmp_path)

    assert result.returncode != 0
    assert "DATABASE_URL is not set" in result.stdout + result.stderr
