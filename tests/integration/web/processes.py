"""Real processes for tests: a Celery worker, waited for until it answers, stopped by its pid."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from devtools.testbed import ROOT, wait_until

VENV_BIN = Path(sys.executable).parent


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@contextmanager
def celery_worker(
    *,
    queue: str,
    env: dict[str, str] | None = None,
    log_path: Path | None = None,
    pool: str = "solo",
) -> Iterator[subprocess.Popen]:
    """A real `celery worker` subprocess consuming ``queue``; ready once it answers a ping."""
    from kandev_web.celery import app

    full_env = {**os.environ, **(env or {}), "KANDEV_CELERY_QUEUE": queue}
    hostname = f"test-{queue}-{os.getpid()}@localhost"
    command = [
        str(VENV_BIN / "celery"),
        "-A",
        "kandev_web",
        "worker",
        "-Q",
        queue,
        "-P",
        pool,
        "-c",
        "1",
        "-n",
        hostname,
        "--without-gossip",
        "--without-mingle",
        "-l",
        "INFO" if log_path else "WARNING",
    ]
    with open(log_path or os.devnull, "wb") as log:
        process = subprocess.Popen(
            command, cwd=ROOT, env=full_env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            wait_until(
                lambda: (
                    process.poll() is None
                    and bool(app.control.ping(destination=[hostname], timeout=0.5))
                ),
                timeout=60,
                interval=0.2,
                what="celery worker ping",
            )
            yield process
        finally:
            stop(process)
