"""`make run`: one foreground process that owns everything the app needs on one machine.

It starts embedded PostgreSQL and Redis when DATABASE_URL / REDIS_URL are unset (publishing them
in .kandev/services.env for other terminals), collects the static files, migrates, seeds the
demo, then runs the app's processes (devtools.processes: mock provider, Celery worker, Celery
beat, Daphne) with their output prefixed by name. Ctrl-C or SIGTERM stops them all.

A process that fails to start stops the rest and the exit is non-zero, so a broken set-up never
looks half alive. Once the app is up, a process that dies is reported and restarted after a
backoff (KANDEV_RESTART_DELAYS) while the others keep serving; /healthz says 503 meanwhile when
it is the worker.

Children run in their own sessions: a terminal Ctrl-C reaches only this process, which then
stops each child's whole process group in order (Celery's pool processes included).

This module must not import Django: settings need the service URLs it provides.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from devtools import processes
from devtools.devservices import BASE_DIR, ServiceUrls, running_services, state_dir_default
from devtools.processes import ProcessSpec, signal_group

READY_TIMEOUT_S = 60.0
# Celery's warm shutdown waits for running tasks; a prompt that is still streaming is redelivered
# (acks_late) after a hard kill, so the grace period only needs to cover a clean exit.
STOP_GRACE_S = 10.0
# Waits before restarting a process that died, by how often it died in a row (the last repeats).
RESTART_DELAYS_S = (1.0, 2.0, 5.0, 10.0, 30.0)
# A restarted process that stays up this long has recovered: its next death waits the first delay.
STABLE_AFTER_S = 60.0


@dataclass(frozen=True, slots=True)
class RunConfig:
    host: str
    port: int
    mock_port: int
    state_dir: Path
    python: str = sys.executable
    worker_concurrency: int = processes.WORKER_CONCURRENCY
    worker_processes: int = 1
    restart_delays_s: tuple[float, ...] = RESTART_DELAYS_S

    @property
    def url(self) -> str:
        return f"http://{processes.connect_host(self.host)}:{self.port}/"

    @property
    def mock_url(self) -> str:
        return f"http://127.0.0.1:{self.mock_port}"


def config_from_env(*, env: dict[str, str]) -> RunConfig:
    def whole(name: str, default: int) -> int:
        raw = env.get(name) or str(default)
        if not raw.isdigit():
            raise SystemExit(f"{name} must be a whole number, got {raw!r}")
        return int(raw)

    def delays(name: str, default: tuple[float, ...]) -> tuple[float, ...]:
        raw = env.get(name)
        if not raw:
            return default
        try:
            parsed = tuple(float(item) for item in raw.split(","))
        except ValueError:
            parsed = ()
        if not parsed or any(not 0 <= delay < float("inf") for delay in parsed):
            raise SystemExit(f"{name} must be seconds separated by commas, got {raw!r}")
        return parsed

    worker_processes = whole("KANDEV_WORKER_PROCESSES", processes.worker_processes_default())
    if worker_processes < 1:
        raise SystemExit("KANDEV_WORKER_PROCESSES must be at least 1")
    return RunConfig(
        host=env.get("HOST") or "127.0.0.1",
        port=whole("PORT", 8000),
        mock_port=whole("KANDEV_MOCK_PORT", 8765),
        state_dir=Path(env.get("KANDEV_STATE_DIR") or state_dir_default()).resolve(),
        worker_concurrency=whole("KANDEV_WORKER_CONCURRENCY", processes.WORKER_CONCURRENCY),
        worker_processes=worker_processes,
        restart_delays_s=delays("KANDEV_RESTART_DELAYS", RESTART_DELAYS_S),
    )


def setup_commands(*, config: RunConfig) -> list[ProcessSpec]:
    manage = (config.python, str(BASE_DIR / "manage.py"))
    return [
        # First: Daphne serves only collected files, and pages name their hashed copies.
        ProcessSpec("collectstatic", (*manage, "collectstatic", "--noinput")),
        ProcessSpec("migrate", (*manage, "migrate", "--noinput")),
        ProcessSpec("seed", (*manage, "seed_demo")),
    ]


def long_running(*, config: RunConfig) -> tuple[ProcessSpec, ...]:
    return processes.app_processes(
        web_host=config.host,
        web_port=config.port,
        mock_host="127.0.0.1",
        mock_port=config.mock_port,
        worker_concurrency=config.worker_concurrency,
        worker_processes=config.worker_processes,
        beat_schedule=str(config.state_dir / "celerybeat-schedule"),
        python=config.python,
    )


def restart_delay(*, delays: Sequence[float], deaths_in_a_row: int) -> float:
    """The wait before restarting a process that died ``deaths_in_a_row`` times (1 or more)."""
    return delays[min(deaths_in_a_row, len(delays)) - 1]


@dataclass(slots=True)
class Child:
    """One long-running process and its restart bookkeeping."""

    spec: ProcessSpec
    process: subprocess.Popen
    started_at: float
    deaths_in_a_row: int = 0
    restart_at: float | None = None  # set while it is dead and waiting to be restarted


class Supervisor:
    """Starts children, pumps their output with a name prefix, restarts the ones that die, and
    stops them all together."""

    def __init__(
        self,
        *,
        env: dict[str, str],
        stopping: threading.Event,
        out=None,
        restart_delays_s: Sequence[float] = RESTART_DELAYS_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.env = env
        self.stopping = stopping
        self.out = out or sys.stdout
        self.restart_delays_s = tuple(restart_delays_s)
        self.clock = clock
        self.children: list[Child] = []
        self.one_shots: list[subprocess.Popen] = []
        self.pumps: list[threading.Thread] = []
        self.printed_ready: set[str] = set()
        self._print_lock = threading.Lock()

    def say(self, name: str, line: str) -> None:
        with self._print_lock:
            self.out.write(f"{name:>7} | {line}\n")
            self.out.flush()

    def _spawn(self, spec: ProcessSpec) -> subprocess.Popen:
        process = subprocess.Popen(
            spec.argv, cwd=BASE_DIR, env=self.env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        pump = threading.Thread(target=self._pump, args=(spec, process), daemon=True)
        pump.start()
        self.pumps.append(pump)
        return process

    def _pump(self, spec: ProcessSpec, process: subprocess.Popen) -> None:
        for raw in process.stdout:
            line = raw.decode(errors="replace").rstrip()
            if spec.ready_line and spec.ready_line in line:
                self.printed_ready.add(spec.name)
            self.say(spec.name, line)

    def run_to_end(self, spec: ProcessSpec) -> int | None:
        """Exit code of a one-shot command, or None when a stop was requested meanwhile (the
        command is then left to stop_all)."""
        process = self._spawn(spec)
        self.one_shots.append(process)
        while not self.stopping.is_set():
            try:
                code = process.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                continue
            self.one_shots.remove(process)
            return code
        return None

    def start(self, spec: ProcessSpec) -> None:
        self.children.append(Child(spec, self._spawn(spec), started_at=self.clock()))

    def first_dead(self) -> tuple[ProcessSpec, int] | None:
        for child in self.children:
            code = child.process.poll()
            if code is not None:
                return child.spec, code
        return None

    def is_ready(self, spec: ProcessSpec) -> bool:
        if spec.ready_url:
            return processes.answers(spec.ready_url)
        if spec.ready_line:
            return spec.name in self.printed_ready
        return True

    def wait_ready(self, spec: ProcessSpec, *, deadline: float) -> bool:
        while time.monotonic() < deadline and not self.stopping.is_set():
            if self.first_dead() is not None:
                return False
            if self.is_ready(spec):
                return True
            self.stopping.wait(0.2)
        return False

    def keep_alive(self) -> None:
        """One supervision step: report and schedule the restart of children that died, restart
        the ones whose wait is over, and forgive the ones that stayed up."""
        now = self.clock()
        for child in self.children:
            if child.restart_at is not None:
                if now >= child.restart_at:
                    self._restart(child, now=now)
                continue
            code = child.process.poll()
            if code is None:
                if child.deaths_in_a_row and now - child.started_at >= STABLE_AFTER_S:
                    child.deaths_in_a_row = 0
                continue
            # Its pool processes would hold the broker connection and the port: end them too.
            signal_group(child.process, signal.SIGKILL)
            child.deaths_in_a_row += 1
            delay = restart_delay(
                delays=self.restart_delays_s, deaths_in_a_row=child.deaths_in_a_row
            )
            child.restart_at = now + delay
            self.say(
                "run",
                f"{child.spec.name} exited with code {code}; restarting it in {delay:g} s"
                f" (death {child.deaths_in_a_row} in a row)",
            )

    def _restart(self, child: Child, *, now: float) -> None:
        self.printed_ready.discard(child.spec.name)
        child.process = self._spawn(child.spec)
        child.started_at = now
        child.restart_at = None
        self.say("run", f"restarted {child.spec.name} (pid {child.process.pid})")

    def stop_all(self) -> None:
        """Stop children newest first (web before the worker before the mock), each with its
        whole process group, then kill whatever outlived the grace period."""
        named = [("setup", p) for p in self.one_shots]
        named += [(child.spec.name, child.process) for child in self.children]
        for _name, process in reversed(named):
            signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for name, process in reversed(named):
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.say("run", f"{name} did not stop in {STOP_GRACE_S:.0f} s; killing it")
                signal_group(process, signal.SIGKILL)
                process.wait()
            # Its pool processes may outlive the leader for a moment; the group goes with it.
            signal_group(process, signal.SIGKILL)
        for pump in self.pumps:
            pump.join(timeout=2)
        self.children.clear()
        self.one_shots.clear()


def port_is_free(*, host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        # As the servers do: a port whose last connections linger in TIME_WAIT is free to them.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def demo_password(
    *,
    state_dir: Path,
    env: dict[str, str],
    variable: str = "KANDEV_DEMO_PASSWORD",
    file_name: str = "demo_password",
) -> str:
    """A stable local dev password: from ``variable``, else generated once and kept in the
    (git-ignored) state directory so the login stays the same across runs."""
    if env.get(variable):
        return env[variable]
    path = state_dir / file_name
    if path.exists():
        return path.read_text().strip()
    password = secrets.token_urlsafe(9)
    path.write_text(password + "\n")
    path.chmod(0o600)
    return password


def admin_password(*, state_dir: Path, env: dict[str, str]) -> str:
    return demo_password(
        state_dir=state_dir, env=env, variable="KANDEV_ADMIN_PASSWORD", file_name="admin_password"
    )


def banner(*, config: RunConfig, password: str, admin: str = "") -> str:
    admin_line = [f"  Admin (retry notices, targets): {config.url}admin/  as admin / {admin}"]
    return "\n".join(
        [
            "",
            f"  Kandev Web is running at {config.url}",
            f"  Log in as: demo / {password}",
            *(admin_line if admin else []),
            # The README's marker spelling, so the hint and the README teach one thing.
            f"  Mock provider: {config.mock_url}"
            "  (try the prompt: [[mock:overloaded:2]] tell me a joke)",
            "  Press Ctrl-C to stop everything.",
            "",
        ]
    )


def child_env(
    *, config: RunConfig, urls: ServiceUrls, password: str, admin: str = ""
) -> dict[str, str]:
    env = dict(os.environ)
    env.update(urls.as_env())
    env.setdefault("KANDEV_MOCK_PROVIDER_URL", config.mock_url)
    env.update(
        KANDEV_STATE_DIR=str(config.state_dir),
        KANDEV_DEMO_PASSWORD=password,
        # Every process knows how many workers share the box (the streams' flush budget).
        KANDEV_WORKER_PROCESSES=str(config.worker_processes),
        PYTHONUNBUFFERED="1",
    )
    if admin:
        env["KANDEV_ADMIN_PASSWORD"] = admin
    return env


def serve(*, config: RunConfig) -> int:
    for name, host, port in (
        ("PORT", config.host, config.port),
        ("KANDEV_MOCK_PORT", "127.0.0.1", config.mock_port),
    ):
        if not port_is_free(host=host, port=port):
            print(f"Port {port} on {host} is in use. Stop what uses it or set {name}.", flush=True)
            return 2
    config.state_dir.mkdir(parents=True, exist_ok=True)
    password = demo_password(state_dir=config.state_dir, env=dict(os.environ))
    admin = admin_password(state_dir=config.state_dir, env=dict(os.environ))
    stop_requested = threading.Event()

    def request_stop(signum, frame):
        stop_requested.set()

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    env_file = config.state_dir / "services.env"
    with running_services(state_dir=config.state_dir, env_file=env_file) as urls:
        supervisor = Supervisor(
            env=child_env(config=config, urls=urls, password=password, admin=admin),
            stopping=stop_requested,
            restart_delays_s=config.restart_delays_s,
        )
        try:
            return _supervise(
                supervisor=supervisor,
                config=config,
                password=password,
                admin=admin,
                stop=stop_requested,
            )
        finally:
            supervisor.stop_all()
            supervisor.say("run", "stopped")


def _supervise(
    *,
    supervisor: Supervisor,
    config: RunConfig,
    password: str,
    stop: threading.Event,
    admin: str = "",
) -> int:
    specs = long_running(config=config)
    for spec in specs:
        if _before_setup(spec):
            supervisor.start(spec)
    for spec in setup_commands(config=config):
        code = supervisor.run_to_end(spec)
        if code is None:
            return 0
        if code != 0:
            supervisor.say("run", f"{spec.name} failed with exit code {code}")
            return 1
    for spec in specs:
        if not _before_setup(spec):
            supervisor.start(spec)
    deadline = time.monotonic() + READY_TIMEOUT_S
    for spec in specs:
        if not supervisor.wait_ready(spec, deadline=deadline):
            if stop.is_set():
                return 0
            dead = supervisor.first_dead()
            if dead is not None:
                supervisor.say("run", f"{dead[0].name} exited with code {dead[1]} while starting")
            else:
                supervisor.say("run", f"{spec.name} was not ready within {READY_TIMEOUT_S:.0f} s")
            return 1
    print(banner(config=config, password=password, admin=admin), flush=True)
    while not stop.wait(0.25):
        supervisor.keep_alive()
    return 0


def _before_setup(spec: ProcessSpec) -> bool:
    """Started while the database migrates, to save time; the others need the migrated, seeded
    database."""
    return spec.name == "mock" or processes.is_worker(spec)


def main() -> int:
    return serve(config=config_from_env(env=dict(os.environ)))


if __name__ == "__main__":
    sys.exit(main())
