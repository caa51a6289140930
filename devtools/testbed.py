"""For tests and benchmarks that run the real stack as subprocesses: free ports,
`manage.py` in a child environment, and throwaway PostgreSQL databases. The processes themselves
are started from devtools/processes.py.

Subprocesses (Daphne, Celery workers) cannot join pytest's transaction, so they get a database of
their own on the configured server, dropped afterwards. That works for TCP and unix-socket URLs
alike: only the URL's path (the database name) changes.
"""

from __future__ import annotations

import hashlib
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


def migrations_digest() -> str:
    """What decides a migrated schema: the project's migration files and the locked third-party
    versions (whose migrations come with them)."""
    digest = hashlib.sha256((ROOT / "uv.lock").read_bytes())
    packages = [d for d in sorted(ROOT.iterdir()) if (d / "__init__.py").is_file()]
    for package in packages:
        for path in sorted(package.glob("**/migrations/*.py")):
            digest.update(str(path.relative_to(ROOT)).encode() + path.read_bytes())
    return digest.hexdigest()[:12]


def database_migrated(base_url: str, name: str, env: dict[str, str]) -> str:
    """``name`` afresh with every migration applied, and its URL. The first call for a set of
    migrations migrates a template database (a minute's share of each stack's start on a busy
    machine); later calls copy it (CREATE DATABASE ... TEMPLATE, a fraction of a second). The
    template is built under a temporary name and renamed when complete, so a migrate that fails
    leaves nothing that looks finished; templates of older migrations are dropped."""
    template = f"{name}_tpl_{migrations_digest()}"
    with psycopg.connect(base_url, autocommit=True) as conn:
        names = [row[0] for row in conn.execute("SELECT datname FROM pg_database")]
    if template not in names:
        for stale in names:
            if stale.startswith(f"{name}_tpl_"):
                database_drop(base_url, stale)
        building = f"{template}_building"
        url = database_create(base_url, building)
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
            cwd=ROOT,
            env={**env, "DATABASE_URL": url},
            check=True,
            timeout=300,
        )
        with psycopg.connect(base_url, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{building}" RENAME TO "{template}"')
    database_drop(base_url, name)
    with psycopg.connect(base_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
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
