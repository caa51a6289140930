"""`make run`'s supervisor, run for real in a subprocess: embedded services, migrate, seed, mock
provider, Daphne, Celery worker and beat; a child that dies comes back while the others serve; one
signal stops them all."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest
from django.contrib.auth.hashers import check_password

from devtools import processes
from devtools.devservices import BASE_DIR
from devtools.eventually import eventually
from devtools.processes import ProcessSpec
from devtools.supervisor import STABLE_AFTER_S, Supervisor, config_from_env
from devtools.testbed import free_port
from recovery.clock import FakeClock

from .conftest import env_without_services, is_gone, short_temp_dir

BANNER = "Kandev Web is running at"
DEMO_PASSWORD = "demo-pass-ops-test"


# Each test starts `make run`'s whole supervisor (embedded Postgres initialised, migrate, seed,
# Daphne, a worker, beat): more than pytest.ini's 120 s on a loaded 2-core machine.
pytestmark = pytest.mark.timeout(420)


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
                KANDEV_MOCK_PORT=str(self.mock_port),
                KANDEV_DEMO_PASSWORD=DEMO_PASSWORD,
                **{
                    "KANDEV_WORKER_CONCURRENCY": "1",
                    "KANDEV_WORKER_PROCESSES": "1",
                    **env,
                    "PORT": str(self.port),
                },
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, text: str, *, timeout_s: float = 240) -> None:
        # A bound, not a pace: a first start initialises Postgres, which took over 90 s on a
        # 2-core machine at load 13.
        tail = eventually(
            lambda: self.output[-4000:],
            until=lambda _: self.saw(text) or self.process.poll() is not None,
            timeout=timeout_s,
            interval=0.1,
            what=f"{text!r} in the supervisor's output",
        )
        assert self.saw(text), f"the supervisor exited before {text!r}; output:\n{tail}"

    def saw(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def wait_exit(self, *, timeout_s: float = 40) -> int:
        code = self.process.wait(timeout=timeout_s)
        self._reader.join(timeout=5)
        return code

    def descendants(self) -> list[psutil.Process]:
        return psutil.Process(self.process.pid).children(recursive=True)

    def child(self, name: str) -> psutil.Process:
        """The supervisor's direct child running ``name`` (as the output prefixes call it)."""
        marks = {"mock": "recovery.mock", "worker": " worker ", "beat": " beat ", "web": "daphne"}
        found = [
            p
            for p in psutil.Process(self.process.pid).children()
            if marks[name] in " ".join(p.cmdline()) + " "
        ]
        assert len(found) == 1, (name, [p.cmdline() for p in found])
        return found[0]

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
    # Two worker processes, as on a 2-core box (one per core): each its own Celery node.
    run = supervisor_factory(KANDEV_WORKER_PROCESSES="2")
    run.wait_for(BANNER)

    assert http_status(f"http://127.0.0.1:{run.port}/admin/login/") == 200
    assert http_status(f"http://127.0.0.1:{run.mock_port}/_mock/health") == 200
    assert f"Log in as: demo / {DEMO_PASSWORD}" in run.output
    admin_password = (run.state_dir / "admin_password").read_text().strip()
    admin_line = f"Admin (retry notices, targets): http://127.0.0.1:{run.port}/admin/  as admin / "
    assert admin_line + admin_password in run.output
    for name in ("collectstatic", "migrate", "seed", "worker1", "worker2", "beat", "web"):
        assert any(line.lstrip().startswith(f"{name} | ") for line in run.lines), name
    for node in ("worker1@", "worker2@"):
        assert any(node in line and " ready." in line for line in run.lines), node
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
        admin_encoded, admin_staff = connection.execute(
            "select password, is_staff from auth_user where username = 'admin'"
        ).fetchone()
    assert check_password(DEMO_PASSWORD, encoded)
    assert admin_staff and check_password(admin_password, admin_encoded)
    assert target == ("mock", "mock-1", f"http://127.0.0.1:{run.mock_port}")
    children = run.descendants()
    assert len(children) >= 5  # mock, two workers, beat, web
    services = run.service_pids()
    assert len(services) == 2

    os.kill(run.process.pid, signal.SIGINT)

    assert run.wait_exit() == 0
    assert "run | stopped" in run.output
    assert [p.pid for p in children if not is_gone(p.pid)] == []
    assert [pid for pid in services if not is_gone(pid)] == []
    assert not env_file.exists()


def healthz_status(port: int) -> int:
    try:
        return http_status(f"http://127.0.0.1:{port}/healthz")
    except urllib.error.HTTPError as error:
        return error.code


def healthz_reaches(port: int, status: int, *, timeout_s: float, what: str) -> None:
    eventually(
        lambda: healthz_status(port),
        until=lambda seen: seen == status,
        timeout=timeout_s,
        interval=0.1,
        what=what,
    )


@pytest.mark.chaos
def test_a_killed_worker_comes_back_while_web_keeps_serving(supervisor_factory):
    run = supervisor_factory(KANDEV_RESTART_DELAYS="1")
    run.wait_for(BANNER)
    healthz_reaches(run.port, 200, timeout_s=30, what="a healthy app")
    others = {name: run.child(name).pid for name in ("mock", "beat", "web")}
    worker = run.child("worker")
    pool = worker.children()

    worker.kill()

    run.wait_for("worker exited with code -9; restarting it in 1 s (death 1 in a row)")
    healthz_reaches(run.port, 503, timeout_s=10, what="503 while it is down")
    assert http_status(f"http://127.0.0.1:{run.port}/accounts/login/") == 200
    healthz_reaches(run.port, 200, timeout_s=60, what="healthy again")
    restarted = run.child("worker")
    assert restarted.pid != worker.pid
    assert f"restarted worker (pid {restarted.pid})" in run.output
    assert {name: run.child(name).pid for name in others} == others
    assert [p.pid for p in pool if not is_gone(p.pid)] == []  # its orphaned pool went with it
    assert run.process.poll() is None
    children = run.descendants()

    os.kill(run.process.pid, signal.SIGINT)

    assert run.wait_exit() == 0
    assert [p.pid for p in children if not is_gone(p.pid)] == []


def test_it_refuses_a_port_in_use_before_starting_anything(supervisor_factory):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = supervisor_factory(PORT=str(port))
        assert run.wait_exit(timeout_s=20) == 2
    assert f"Port {port} on 127.0.0.1 is in use" in run.output
    assert not (run.state_dir / "postgres").exists()


class Restarts:
    """A real Supervisor on a fake clock: its children are real processes, its waits are not."""

    def __init__(self, *, delays: tuple[float, ...]) -> None:
        self.clock = FakeClock()
        self.out = io.StringIO()
        self.supervisor = Supervisor(
            env=dict(os.environ), stopping=threading.Event(), out=self.out,
            restart_delays_s=delays, clock=self.clock.monotonic,
        )  # fmt: skip

    @property
    def process(self) -> subprocess.Popen:
        return self.supervisor.children[0].process

    def step(self, *, after_s: float = 0.0) -> None:
        self.clock.advance(after_s)
        self.supervisor.keep_alive()

    def reported(self) -> list[str]:
        return [line.split("| ", 1)[1] for line in self.out.getvalue().splitlines()
                if line.lstrip().startswith("run |")]  # fmt: skip


@pytest.fixture
def restarts():
    started: list[Restarts] = []

    def make(**kwargs) -> Restarts:
        started.append(Restarts(**kwargs))
        return started[-1]

    yield make
    for each in started:
        each.supervisor.stop_all()


def test_a_child_that_keeps_dying_is_restarted_after_each_delay_in_turn(restarts):
    run = restarts(delays=(1.0, 5.0))
    run.supervisor.start(ProcessSpec("crasher", (sys.executable, "-c", "raise SystemExit(3)")))
    first = run.process
    first.wait(timeout=30)

    run.step()
    run.step(after_s=0.9)
    assert run.process is first  # still waiting out its delay
    run.step(after_s=0.1)
    second = run.process
    second.wait(timeout=30)
    run.step()
    run.step(after_s=5)
    run.process.wait(timeout=30)
    run.step()

    assert second is not first
    assert run.reported() == [
        "crasher exited with code 3; restarting it in 1 s (death 1 in a row)",
        f"restarted crasher (pid {second.pid})",
        "crasher exited with code 3; restarting it in 5 s (death 2 in a row)",
        f"restarted crasher (pid {run.process.pid})",
        "crasher exited with code 3; restarting it in 5 s (death 3 in a row)",
    ]


def test_a_child_that_stayed_up_after_a_restart_waits_the_first_delay_again(restarts):
    run = restarts(delays=(1.0, 5.0))
    pause = "import signal; signal.pause()"
    run.supervisor.start(ProcessSpec("sleeper", (sys.executable, "-c", pause)))
    run.process.kill()
    run.process.wait(timeout=30)
    run.step()
    run.step(after_s=1)
    run.step(after_s=STABLE_AFTER_S)

    run.process.kill()
    run.process.wait(timeout=30)
    run.step()

    assert run.reported()[-1] == (
        "sleeper exited with code -9; restarting it in 1 s (death 1 in a row)"
    )


def test_it_reads_restart_delays_from_the_environment_and_refuses_bad_ones():
    assert config_from_env(env={"KANDEV_RESTART_DELAYS": "0.5,2"}).restart_delays_s == (0.5, 2.0)
    with pytest.raises(SystemExit, match="KANDEV_RESTART_DELAYS must be seconds"):
        config_from_env(env={"KANDEV_RESTART_DELAYS": "1,soon"})


def test_it_starts_a_worker_per_core_and_refuses_none(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert config_from_env(env={}).worker_processes == 2
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)))
    assert config_from_env(env={}).worker_processes == processes.WORKER_PROCESSES_MAX
    assert config_from_env(env={"KANDEV_WORKER_PROCESSES": "3"}).worker_processes == 3
    with pytest.raises(SystemExit, match="KANDEV_WORKER_PROCESSES must be at least 1"):
        config_from_env(env={"KANDEV_WORKER_PROCESSES": "0"})


def test_several_workers_are_separate_celery_nodes_and_one_keeps_its_plain_name():
    def workers(count: int) -> list[tuple[str, str]]:
        specs = processes.app_processes(
            web_host="127.0.0.1", web_port=1, mock_host="127.0.0.1", mock_port=2,
            worker_concurrency=5, beat_schedule="s", worker_processes=count,
        )  # fmt: skip
        found = [s for s in specs if processes.is_worker(s)]
        return [(s.name, s.argv[s.argv.index("--hostname") + 1] if "--hostname" in s.argv
                 else "") for s in found]  # fmt: skip

    assert workers(1) == [("worker", "")]
    assert workers(2) == [("worker1", "worker1@%h"), ("worker2", "worker2@%h")]
