"""Settings that decide how exposed a deployment is, read the way a fresh process reads them."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from devtools.testbed import ROOT

# The settings module alone, as every process (web, worker, beat, manage.py) evaluates it.
READ_SETTINGS = """
import json
import kandev_web.settings as settings
print(json.dumps({name: getattr(settings, name, None) for name in %r}))
"""


def settings_of(names: list[str], *, env: dict[str, str]) -> dict:
    base = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "KANDEV_SECRET_KEY")}
    run = subprocess.run(
        [sys.executable, "-c", READ_SETTINGS % names],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_without_a_configured_key_one_is_generated_once_and_kept(tmp_path):
    env = {"KANDEV_STATE_DIR": str(tmp_path)}

    first = settings_of(["SECRET_KEY"], env=env)["SECRET_KEY"]
    second = settings_of(["SECRET_KEY"], env=env)["SECRET_KEY"]

    assert first == second and len(first) >= 50
    assert first != "kandev-dev-only-insecure-secret-key"
    kept = tmp_path / "secret_key"
    assert kept.read_text().strip() == first
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600


@pytest.mark.parametrize("name", ["KANDEV_SECRET_KEY", "SECRET_KEY"])
def test_a_configured_key_wins_and_nothing_is_written(tmp_path, name):
    value = "configured-" + "k" * 50
    assert settings_of(["SECRET_KEY"], env={"KANDEV_STATE_DIR": str(tmp_path), name: value}) == {
        "SECRET_KEY": value
    }
    assert not (tmp_path / "secret_key").exists()


def test_behind_tls_with_debug_off_cookies_are_secure_and_hsts_is_on(tmp_path):
    names = [
        "SESSION_COOKIE_SECURE",
        "CSRF_COOKIE_SECURE",
        "SECURE_HSTS_SECONDS",
        "SECURE_PROXY_SSL_HEADER",
    ]
    env = {"KANDEV_STATE_DIR": str(tmp_path), "DEBUG": "false", "KANDEV_HTTPS": "true"}

    values = settings_of(names, env=env)

    assert values["SESSION_COOKIE_SECURE"] is True and values["CSRF_COOKIE_SECURE"] is True
    assert values["SECURE_HSTS_SECONDS"] == 31_536_000
    assert values["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]


@pytest.mark.parametrize(
    "env", [{"KANDEV_HTTPS": "false"}, {"KANDEV_HTTPS": "true", "DEBUG": "true"}], ids=str
)
def test_over_plain_http_or_in_debug_cookies_stay_usable_and_no_hsts(tmp_path, env):
    names = ["SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_HSTS_SECONDS"]
    values = settings_of(names, env={"KANDEV_STATE_DIR": str(tmp_path), **env})
    assert values == {
        "SESSION_COOKIE_SECURE": False,
        "CSRF_COOKIE_SECURE": False,
        "SECURE_HSTS_SECONDS": 0,
    }


def test_each_secure_setting_can_be_set_on_its_own(tmp_path):
    env = {
        "KANDEV_STATE_DIR": str(tmp_path),
        "KANDEV_SECURE_COOKIES": "true",
        "KANDEV_HSTS_SECONDS": "600",
        "KANDEV_HSTS_INCLUDE_SUBDOMAINS": "true",
    }
    names = ["SESSION_COOKIE_SECURE", "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS"]
    assert settings_of(names, env=env) == {
        "SESSION_COOKIE_SECURE": True,
        "SECURE_HSTS_SECONDS": 600,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
    }
