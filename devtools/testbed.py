"""For tests and benchmarks that run the real stack as subprocesses: free ports,
`manage.py` in a child environment, and throwaway PostgreSQL databases. The processes themselves
are started from devtools/processes.py.

Subprocesses (Daphne, Celery workers) cannot join pytest's transaction, so they get a database of
their own on the configured server, dropped afterwards. That works for TCP and unix-socket URLs
alike: only the URL's path (the database name) changes.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import psycopg

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def manage(env: dict[str, str], *args: str, timeout: float = 300) -> str:
    """Run ``manage.py ARGS`` with ``env`` and return its standard output."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=timeout,
    ).stdout


def database_url_named(base_url: str, name: str) -> str:
    """``base_url`` pointing at database ``name`` on the same server."""
    return urlunparse(urlparse(base_url)._replace(path=f"/{name}"))


def database_drop(base_url: str, name: str) -> None:
    with psycopg.connect(base_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def database_create(base_url: str, name: str) -> str:
    """Create ``name`` afresh (dropping a leftover of a crashed run) and return its URL."""
    database_drop(base_url, name)
    with psycopg.connect(base_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return database_url_named(base_url, name)


@contextmanager
def throwaway_database(base_url: str, name: str | None = None) -> Iterator[str]:
    """A fresh, empty database on the server of ``base_url``, dropped on exit; yields its URL."""
    name = name or f"kandev_tmp_{uuid.uuid4().hex[:10]}"
    url = database_create(base_url, name)
    try:
        yield url
    finally:
        database_drop(base_url, name)
