"""Embedded PostgreSQL and Redis: real servers in a private directory, published while up,
gone afterwards."""

from __future__ import annotations

import os
import subprocess
import sys

import psycopg
import pytest
import redis

from devtools.devservices import BASE_DIR, EmbeddedServices, ServiceUrls, running_services

from .conftest import env_without_services, is_gone, short_temp_dir


@pytest.fixture(scope="module")
def state_dir():
    # One data directory for the module: initdb is the slow part of a first start, and every test
    # here starts and stops its own servers on it anyway.
    with short_temp_dir() as path:
        yield path


PROBE = (
    "import os, psycopg, redis;"
    "print(psycopg.connect(os.environ['DATABASE_URL']).execute('select 41 + 1').fetchone()[0]);"
    "print(redis.Redis.from_url(os.environ['REDIS_URL']).ping());"
    "raise SystemExit(3)"
)


def test_it_starts_a_private_postgres_and_redis_that_answer(state_dir):
    services = EmbeddedServices(state_dir=state_dir, configured={})
    try:
        urls = services.start()
        with psycopg.connect(urls.database_url) as connection:
            assert connection.execute("select 1").fetchone() == (1,)
        client = redis.Redis.from_url(urls.redis_url)
        assert client.ping() is True
        client.close()
        assert urls.database_url.startswith("postgresql://")
        assert f"host={state_dir}" in urls.database_url
        assert urls.redis_url.startswith("unix://")
        pids = services.pids
    finally:
        services.stop()
    assert set(pids) == {"postgres", "redis"}
    assert all(is_gone(pid) for pid in pids.values())


def test_it_keeps_data_across_a_restart_of_the_same_state_dir(state_dir):
    with (
        running_services(state_dir=state_dir, configured={}) as urls,
        psycopg.connect(urls.database_url, autocommit=True) as connection,
    ):
        connection.execute("drop table if exists kept")
        connection.execute("create table kept (note text)")
        connection.execute("insert into kept values ('still here')")
    with (
        running_services(state_dir=state_dir, configured={}) as urls,
        psycopg.connect(urls.database_url) as connection,
    ):
        assert connection.execute("select note from kept").fetchone() == ("still here",)


def test_it_publishes_services_env_while_up_and_removes_it_on_exit(state_dir):
    env_file = state_dir / "services.env"
    with running_services(state_dir=state_dir, env_file=env_file, configured={}) as urls:
        published = dict(
            line.split("=", 1)
            for line in env_file.read_text().splitlines()
            if line and not line.startswith("#")
        )
        assert published == urls.as_env()
    assert not env_file.exists()


def test_it_publishes_only_what_it_started_so_a_configured_password_stays_out_of_the_file(
    state_dir,
):
    env_file = state_dir / "services.env"
    given = {"DATABASE_URL": "postgresql://kandev:s3cret-db-pass@db.internal:5432/kandev"}
    with running_services(state_dir=state_dir, env_file=env_file, configured=given) as urls:
        written = env_file.read_text()
        assert urls.database_url == given["DATABASE_URL"]
        assert f"REDIS_URL={urls.redis_url}" in written
    assert "s3cret-db-pass" not in written
    assert "DATABASE_URL" not in written


def test_it_starts_nothing_for_services_that_are_configured():
    given = {"DATABASE_URL": os.environ["DATABASE_URL"], "REDIS_URL": os.environ["REDIS_URL"]}
    with short_temp_dir() as empty_dir:
        services = EmbeddedServices(state_dir=empty_dir, configured=given)
        assert services.start() == ServiceUrls(given["DATABASE_URL"], given["REDIS_URL"])
        assert services.pids == {}
        services.stop()
        assert list(empty_dir.iterdir()) == []


def test_exec_runs_the_command_with_embedded_services_and_returns_its_exit_code(state_dir):
    (state_dir / "services.env").unlink(missing_ok=True)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "devtools.devservices",
            "--state-dir",
            str(state_dir),
            "exec",
            "--",
            sys.executable,
            "-c",
            PROBE,
        ],
        cwd=BASE_DIR,
        env=env_without_services(),
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 3, result.stderr
    assert result.stdout.split() == ["42", "True"]
    # Stopped afterwards: pgserver removes its pid file when the server shuts down.
    assert not (state_dir / "postgres" / "postmaster.pid").exists()


def test_exec_uses_the_configured_services_when_both_are_set(tmp_path):
    state_dir = tmp_path / "state"
    env = env_without_services(
        DATABASE_URL=os.environ["DATABASE_URL"], REDIS_URL=os.environ["REDIS_URL"]
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "devtools.devservices",
            "--state-dir",
            str(state_dir),
            "exec",
            "--",
            sys.executable,
            "-c",
            "import os; print(os.environ['DATABASE_URL'], os.environ['REDIS_URL'])",
        ],
        cwd=BASE_DIR,
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [os.environ["DATABASE_URL"], os.environ["REDIS_URL"]]
    assert not state_dir.exists()
