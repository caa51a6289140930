"""`make run`: one foreground process that owns everything the app needs on one machine.

It starts embedded PostgreSQL and Redis when DATABASE_URL / REDIS_URL are unset (publishing them
in .kandev/services.env for other terminals), migrates, seeds the demo, then runs the mock
provider, Daphne, one Celery worker and Celery beat with their output prefixed by name. Ctrl-C
or SIGTERM stops them all; a child that dies on its own stops the rest and the exit is non-zero,
so a broken set-up never looks half alive.

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
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from devtools.devservices import BASE_DIR, ServiceUrls, running_services, state_dir_default

READY_TIMEOUT_S = 60.0
# Celery's warm shutdown waits for running tasks; a prompt that is still streaming is redelivered
# (acks_late) after a hard kill, so the grace period only needs to cover a clean exit.
STOP_GRACE_S = 10.0


@dataclass(frozen=True, slots=True)
class ProcessSpec:
    name: str
    argv: tuple[str, ...]
    # Ready when something answers HTTP on ready_url (any status), or once the process printed a
    # line containing ready_line. Neither: ready as soon as it started.
    ready_url: str = ""
    ready_line: str = ""
    # Needs the migrated, seeded database; the others start alongside the migration to save time.
    after_setup: bool = True


@dataclass(frozen=True, slots=True)
class RunConfig:
    host: str
    port: int
    mock_port: int
    state_dir: Path
    python: str = sys.executable
    worker_concurrency: int = 2

    @property
    def browse_host(self) -> str:
        return "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host

    @property
    def url(self) -> str:
        return f"http://{self.browse_host}:{self.port}/"

    @property
    def mock_url(self) -> str:
        return f"http://127.0.0.1:{self.mock_port}"


def config_from_env(*, env: dict[str, str]) -> RunConfig:
    def whole(name: str, default: int) -> int:
        raw = env.get(name) or str(default)
        if not raw.isdigit():
            raise SystemExit(f"{name} must be a whole number, got {raw!r}")
        return int(raw)

    return RunConfig(
        host=env.get("HOST") or "127.0.0.1",
        port=whole("PORT", 8000),
        mock_port=whole("KANDEV_MOCK_PORT", 8765),
        state_dir=Path(env.get("KANDEV_STATE_DIR") or state_dir_default()).resolve(),
        worker_concurrency=whole("KANDEV_WORKER_CONCURRENCY", 2),
    )


def setup_commands(*, config: RunConfig) -> list[ProcessSpec]:
    manage = (config.python, str(BASE_DIR / "manage.py"))
    return [
        ProcessSpec("migrate", (*manage, "migrate", "--noinput")),
        ProcessSpec("seed", (*manage, "seed_demo")),
    ]


def long_running(*, config: RunConfig) -> list[ProcessSpec]:
    python = config.python
    celery = (python, "-m", "celery", "-A", "kandev_web")
    return [
        ProcessSpec(
            "mock",
            (python, "-m", "recovery.mock", "--port", str(config.mock_port)),
            ready_url=f"{config.mock_url}/_mock/health",
            after_setup=False,
        ),
        ProcessSpec(
            "worker",
            (*celery, "worker", "--loglevel", "INFO", "--concurrency",
             str(config.worker_concurrency), "--without-gossip", "--without-mingle"),
            ready_line=" ready.",  # celery's "celery@host ready."
            after_setup=False,
        ),
        ProcessSpec(
            "beat",
            (*celery, "beat", "--loglevel", "INFO",
             "--schedule", str(config.state_dir / "celerybeat-schedule")),
        ),
        ProcessSpec(
            "web",
            (python, "-m", "daphne", "-b", config.host, "-p", str(config.port),
             "kandev_web.asgi:application"),
            ready_url=f"{config.url}admin/login/",
        ),
    ]


class Supervisor:
    """Starts children, pumps their output with a name prefix, and stops them all together."""

    def __init__(self, *, env: dict[str, str], stopping: threading.Event, out=None) -> None:
        self.env = env
        self.stopping = stopping
        self.out = out or sys.stdout
        self.children: list[tuple[ProcessSpec, subprocess.Popen]] = []
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
        )
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
        self.children.append((spec, process))
        while not self.stopping.is_set():
            try:
                code = process.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                continue
            self.children.remove((spec, process))
            return code
        return None

    def start(self, spec: ProcessSpec) -> None:
        self.children.append((spec, self._spawn(spec)))

    def first_dead(self) -> tuple[ProcessSpec, int] | None:
        for spec, process in self.children:
            code = process.poll()
            if code is not None:
                return spec, code
        return None

    def is_ready(self, spec: ProcessSpec) -> bool:
        if spec.ready_url:
            return _answers_http(spec.ready_url)
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

    def stop_all(self) -> None:
        """Stop children newest first (web before the worker before the mock), each with its
        whole process group, then kill whatever outlived the grace period."""
        for _spec, process in reversed(self.children):
            _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for spec, process in reversed(self.children):
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.say("run", f"{spec.name} did not stop in {STOP_GRACE_S:.0f} s; killing it")
                _signal_group(process, signal.SIGKILL)
                process.wait()
            # Its pool processes may outlive the leader for a moment; the group goes with it.
            _signal_group(process, signal.SIGKILL)
        for pump in self.pumps:
            pump.join(timeout=2)
        self.children.clear()


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _answers_http(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1):
            return True
    except urllib.error.HTTPError:
        return True  # it answered; a 4xx/5xx still means the server is up
    except (OSError, ValueError):
        return False


def port_is_free(*, host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        # As the servers do: a port whose last connections linger in TIME_WAIT is free to them.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def demo_password(*, state_dir: Path, env: dict[str, str]) -> str:
    """A stable local dev password: from KANDEV_DEMO_PASSWORD, else generated once and kept in
    the (git-ignored) state directory so the login stays the same across runs."""
    if env.get("KANDEV_DEMO_PASSWORD"):
        return env["KANDEV_DEMO_PASSWORD"]
    path = state_dir / "demo_password"
    if path.exists():
        return path.read_text().strip()
    password = secrets.token_urlsafe(9)
    path.write_text(password + "\n")
    path.chmod(0o600)
    return password


def banner(*, config: RunConfig, password: str) -> str:
    return "\n".join([
        "",
        f"  Kandev Web is running at {config.url}",
        f"  Log in as: demo / {password}",
        f"  Mock provider: {config.mock_url}  (try the prompt: /overloaded:2 tell me a joke)",
        "  Press Ctrl-C to stop everything.",
        "",
    ])


def child_env(*, config: RunConfig, urls: ServiceUrls, password: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(urls.as_env())
    env.setdefault("KANDEV_MOCK_PROVIDER_URL", config.mock_url)
    env.update(
        KANDEV_STATE_DIR=str(config.state_dir),
        KANDEV_DEMO_PASSWORD=password,
        PYTHONUNBUFFERED="1",
    )
    return env


def serve(*, config: RunConfig) -> int:
    for name, host, port in (("PORT", config.host, config.port),
                             ("KANDEV_MOCK_PORT", "127.0.0.1", config.mock_port)):
        if not port_is_free(host=host, port=port):
            print(f"Port {port} on {host} is in use. Stop what uses it or set {name}.", flush=True)
            return 2
    config.state_dir.mkdir(parents=True, exist_ok=True)
    password = demo_password(state_dir=config.state_dir, env=dict(os.environ))
    stop_requested = threading.Event()

    def request_stop(signum, frame):
        stop_requested.set()

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    env_file = config.state_dir / "services.env"
    with running_services(state_dir=config.state_dir, env_file=env_file) as urls:
        supervisor = Supervisor(
            env=child_env(config=config, urls=urls, password=password), stopping=stop_requested
        )
        try:
            return _supervise(
                supervisor=supervisor, config=config, password=password, stop=stop_requested
            )
        finally:
            supervisor.stop_all()
            supervisor.say("run", "stopped")


def _supervise(
    *, supervisor: Supervisor, config: RunConfig, password: str, stop: threading.Event
) -> int:
    specs = long_running(config=config)
    for spec in specs:
        if not spec.after_setup:
            supervisor.start(spec)
    for spec in setup_commands(config=config):
        code = supervisor.run_to_end(spec)
        if code is None:
            return 0
        if code != 0:
            supervisor.say("run", f"{spec.name} failed with exit code {code}")
            return 1
    for spec in specs:
        if spec.after_setup:
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
    print(banner(config=config, password=password), flush=True)
    while not stop.wait(0.25):
        dead = supervisor.first_dead()
        if dead is not None:
            spec, code = dead
            supervisor.say("run", f"{spec.name} exited with code {code}; stopping everything")
            return 1
    return 0


def main() -> int:
    return serve(config=config_from_env(env=dict(os.environ)))


if __name__ == "__main__":
    sys.exit(main())
