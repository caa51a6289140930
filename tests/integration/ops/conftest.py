"""Helpers for the ops tests: real subprocesses and real embedded servers."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil

# Variables that would make a child process use the suite's configured services instead of
# starting its own embedded ones.
SERVICE_VARS = ("DATABASE_URL", "REDIS_URL", "KANDEV_STATE_DIR")


def env_without_services(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in SERVICE_VARS}
    env.update(extra)
    return env


def is_gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@contextlib.contextmanager
def short_temp_dir() -> Iterator[Path]:
    # Short on purpose: unix socket paths must stay under ~107 bytes.
    path = Path(tempfile.mkdtemp(prefix="kops-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
