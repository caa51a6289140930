"""A real Daphne on 127.0.0.1 serving kandev_web.asgi against pytest's own test database.

For tests that need the transport itself (websocket close codes, the OpenAPI fuzz run): they use
``django_db(transaction=True)`` so what they write is committed and this separate process sees it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

from devtools.eventually import eventually
from devtools.processes import answers
from devtools.testbed import ROOT, database_url_named, free_port
from kandev_web.env import env_str


def test_database_env() -> dict[str, str]:
    """The environment of a child process that uses the database pytest-django created."""
    return {
        **os.environ,
        "DATABASE_URL": database_url_named(
            env_str("DATABASE_URL"), settings.DATABASES["default"]["NAME"]
        ),
    }


@contextmanager
def live_daphne(
    *, env: dict[str, str] | None = None, log_path: Path | None = None
) -> Iterator[str]:
    """Daphne serving the app on a free loopback port; yields its base URL."""
    port = free_port()
    with open(log_path or os.devnull, "wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                "127.0.0.1",
                "-p",
                str(port),
                "kandev_web.asgi:application",
            ],
            cwd=ROOT,
            env={**test_database_env(), "DEBUG": "false", **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        base_url = f"http://127.0.0.1:{port}"
        try:
            eventually(
                lambda: process.poll() is None and answers(f"{base_url}/accounts/login/"),
                timeout=60,
                what="daphne",
            )
            yield base_url
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
