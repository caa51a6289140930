"""A real Celery worker for tests: the worker of devtools/processes.py on a queue of its own,
waited for until it answers a control ping, stopped with its process group."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from devtools import processes
from devtools.eventually import eventually
from kandev_web.celery import app


@contextmanager
def celery_worker(
    *,
    queue: str,
    env: dict[str, str] | None = None,
    log_path: Path | None = None,
    pool: str = "solo",
) -> Iterator[subprocess.Popen]:
    """A real `celery worker` subprocess consuming ``queue``; ready once it answers a ping."""
    node = f"test-{queue}-{os.getpid()}@localhost"
    spec = processes.worker(concurrency=1, pool=pool, queue=queue, node=node)
    full_env = {**os.environ, **(env or {}), "KANDEV_CELERY_QUEUE": queue}
    with processes.running(spec, env=full_env, log_path=log_path, timeout_s=60) as process:
        # Its "ready." line comes as its consumer starts; /healthz needs it to answer pings too.
        eventually(
            lambda: (
                process.poll() is None and bool(app.control.ping(destination=[node], timeout=0.5))
            ),
            timeout=60,
            interval=0.2,
            what="celery worker ping",
        )
        yield process
