"""`make run`'s supervisor, run for real in a subprocess: embedded services, migrate, seed, mock
provider, Daphne, Celery worker and beat; one signal stops them all."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import psutil
import pytest
from django.contrib.auth.hashers import check_password

from devtools.devservices import BASE_DIR

from .conftest import env_without_services, free_port, is_gone, short_temp_dir

BANNER = "Kandev Web is running at"
DEMO_PASSWORD = "demo-pass-ops-test"


class RunningSupervisor:
    """The real supervisor process, its output collected line by line."""

    def __init__(self, state_dir: Path, **env: str) -> None:
        self.state_dir = state_dir
        self.port = int(env.get("PORT") or free_port())
        self.mock_port = free_port()
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "devtools.supervisor"],
            cwd=BASE_DIR,
            env=env_without_services(
                KANDEV_STATE_DIR=str(state_dir),
                KANDEV_MOCK_PORT=str(self.mock_port), KANDEV_DEMO_PASSWORD=DEMO_PASSWORD,
                KANDEV_WORKER_CONCURRENCY="1", **{**env, "PORT": str(self.port)},
            ),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, text: str, *, timeout_s: float = 90) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(text in line for line in self.lines):
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"never saw {text!r}; output:\n{self.output[-4000:]}")

    def wait_exit(self, *, timeout_s: float = 40) -> int:
        code = self.process.wait(timeout=timeout_s)
        self._reader.join(timeout=5)
        return code

    def descendants(self) -> list[psutil.Process]:
        return psutil.Process(self.process.pid).children(recursive=True)

    def service_pids(self) -> list[int]:
        """Postgres and Redis daemonise, so they are found through their pid files (which they
        remove when they stop)."""
        pids = []
        postmaster = self.state_dir / "postgres" / "postmaster.pid"
        if postmaster.exists():
            pids.append(int(postmaster.read_text().split()[0]))
        registry = self.state_dir / "redis" / "redis.db.settings"
        if registry.exists():
            pidfile = Path(json.loads(registry.read_text())["pidfile"])
            if pidfile.exists():
                pids.append(int(pidfile.read_text().strip()))
        return pids

    def stop_everything_left(self) -> None:
        """After a failed test: ask politely, then make sure no server outlives the test."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                for process in [psutil.Process(self.process.pid), *self.descendants()]:
                    process.kill()
        for pid in self.service_pids():
            if not is_gone(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def supervisor_factory():
    started: list[RunningSupervisor] = []
    with short_temp_dir() as state_dir:

        def start(**env: str) -> RunningSupervisor:
            running = RunningSupervisor(state_dir, **env)
            started.append(running)
            return running

        yield start
        for running in started:
            running.stop_everything_left()


def http_status(url: str) -> int:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.status


def test_it_serves_the_app_and_stops_everything_on_ctrl_c(supervisor_factory):
    run = supervisor_factory()
    run.wait_for(BANNER)

    assert http_status(f"http://127.0.0.1:{run.port}/admin/login/") == 200
    assert http_status(f"http://127.0.0.1:{run.mock_port}/_mock/health") == 200
    assert f"Log in as: demo / {DEMO_PASSWORD}" in run.output
    for name in ("migrate", "seed", "worker", "beat", "web"):
        assert any(line.lstrip().startswith(f"{name} | ") for line in run.lines), name
    env_file = run.state_dir / "services.env"
    published = dict(
        line.split("=", 1) for line in env_file.read_text().splitlines() if not line.startswith("#")
    )
    import psycopg

    with psycopg.connect(published["DATABASE_URL"]) as connection:
        encoded = connection.execute(
            "select password from auth_user where username = 'demo'"
        ).fetchone()[0]
        target = connection.execute(
            "select kind, model, base_url from sessions_app_providertarget where name = 'Mock'"
        ).fetchone()
    assert check_password(DEMO_PASSWORD, encoded)
    assert target == ("mock", "mock-1", f"http://127.0.0.1:{run.mock_port}")
    children = run.descendants()
    assert len(children) >= 4  # mock, worker (+ its pool), beat, web
    services = run.service_pids()
    assert len(services) == 2

    os.kill(run.process.pid, signal.SIGINT)

    assert run.wait_exit() == 0
    assert "run | stopped" in run.output
    assert [p.pid for p in children if not is_gone(p.pid)] == []
    assert [pid for pid in services if not is_gone(pid)] == []
    assert not env_file.exists()


@pytest.mark.chaos
def test_a_child_that_dies_stops_the_rest_with_a_failure_exit(supervisor_factory):
    run = supervisor_factory()
    run.wait_for(BANNER)
    children = run.descendants()
    mock = next(p for p in children if "recovery.mock" in " ".join(p.cmdline()))

    mock.kill()

    assert run.wait_exit() == 1
    assert "mock exited with code -9; stopping everything" in run.output
    assert [p.pid for p in children if not is_gone(p.pid)] == []
    assert not (run.state_dir / "services.env").exists()


def test_it_refuses_a_port_in_use_before_starting_anything(supervisor_factory):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = supervisor_factory(PORT=str(port))
        assert run.wait_exit(timeout_s=20) == 2
    assert f"Port {port} on 127.0.0.1 is in use" in run.output
    assert not (run.state_dir / "postgres").exists()
