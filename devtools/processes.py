"""The app's four long-running processes, spelled once: web (Daphne), worker (Celery worker), beat
(Celery beat) and mock (the mock provider server).

`make run`'s supervisor, the browser, chaos and benchmark stacks and the tests that need a real
worker all start them from these specs; docker-compose.yml and the Dockerfile run the same command
lines, which tests/integration/ops/test_compose.py holds them to. A consumer chooses the values
(ports, pool, queue, schedule file); the flags are this module's.

This module must not import Django: the supervisor uses it before settings can be loaded.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASGI_APPLICATION = "kandev_web.asgi:application"
CELERY_APP = "kandev_web"
LOOPBACK = "127.0.0.1"
# Celery prints "celery@<node> ready." once its consumer runs.
WORKER_READY_LINE = " ready."
STOP_GRACE_S = 10.0
# A turn spends nearly all its time waiting for a provider or an agent, so one worker process runs
# many on threads (measured against prefork and gevent: docs/ARCHITECTURE.md, "Scale").
WORKER_POOL = "threads"
WORKER_CONCURRENCY = 100
# `make run` starts one worker process per core, up to this many (KANDEV_WORKER_PROCESSES). The
# threads of one process share one GIL: with 200 sessions streaming, one process on a 2-core box
# queued new turns' starts behind its own streams (p99 1.7-2.3 s to the first provider request),
# two did not (0.35-0.43 s; docs/ARCHITECTURE.md, "Scale"). Each process keeps its own pool of
# database connections, so the cap also bounds what the box opens.
WORKER_PROCESSES_MAX = 4


def worker_processes_default() -> int:
    """One worker process per core this process may run on, at least 1, at most the cap."""
    return max(1, min(WORKER_PROCESSES_MAX, len(os.sched_getaffinity(0))))


@dataclass(frozen=True, slots=True)
class ProcessSpec:
    name: str
    argv: tuple[str, ...]
    # Ready once ready_url answers HTTP without a server error, or once the process printed a
    # line containing ready_line. Neither: ready as soon as it started.
    ready_url: str = ""
    ready_line: str = ""


def web(*, port: int, host: str = LOOPBACK, python: str = sys.executable) -> ProcessSpec:
    return ProcessSpec(
        "web",
        (python, "-m", "daphne", "-b", host, "-p", str(port), ASGI_APPLICATION),
        ready_url=f"http://{connect_host(host)}:{port}/accounts/login/",
    )


def worker(
    *,
    concurrency: int,
    pool: str = WORKER_POOL,
    queue: str = "",
    node: str = "",
    loglevel: str = "INFO",
    name: str = "worker",
    python: str = sys.executable,
) -> ProcessSpec:
    """Without ``queue`` the worker consumes the settings' default queue (KANDEV_CELERY_QUEUE);
    without ``node`` it is celery@<hostname>."""
    argv = [
        *_celery(python), "worker", "--loglevel", loglevel, "--pool", pool,
        "--concurrency", str(concurrency),
        # Workers never need each other's state: skip the start-up sync and the gossip traffic.
        "--without-gossip", "--without-mingle",
    ]  # fmt: skip
    if queue:
        argv += ["--queues", queue]
    if node:
        argv += ["--hostname", node]
    return ProcessSpec(name, tuple(argv), ready_line=WORKER_READY_LINE)


def beat(
    *, schedule: str, pidfile: str = "", loglevel: str = "INFO", python: str = sys.executable
) -> ProcessSpec:
    argv = [*_celery(python), "beat", "--loglevel", loglevel, "--schedule", schedule]
    if pidfile:
        argv += ["--pidfile", pidfile]
    return ProcessSpec("beat", tuple(argv))


def mock(*, port: int, host: str = LOOPBACK, python: str = sys.executable) -> ProcessSpec:
    return ProcessSpec(
        "mock",
        (python, "-m", "recovery.mock", "--host", host, "--port", str(port)),
        ready_url=f"http://{connect_host(host)}:{port}/_mock/health",
    )


def app_processes(
    *,
    web_host: str,
    web_port: int,
    mock_host: str,
    mock_port: int,
    worker_concurrency: int,
    beat_schedule: str,
    worker_processes: int = 1,
    python: str = sys.executable,
) -> tuple[ProcessSpec, ...]:
    """The processes of one whole app (`make run`, docker-compose), in start order. One worker
    is "worker"; several are "worker1", "worker2", ..., each its own Celery node."""
    if worker_processes == 1:
        workers = (worker(concurrency=worker_concurrency, python=python),)
    else:
        workers = tuple(
            worker(concurrency=worker_concurrency, node=f"worker{n}@%h", name=f"worker{n}",
                   python=python)
            for n in range(1, worker_processes + 1)
        )  # fmt: skip
    return (
        mock(host=mock_host, port=mock_port, python=python),
        *workers,
        beat(schedule=beat_schedule, python=python),
        web(host=web_host, port=web_port, python=python),
    )


def is_worker(spec: ProcessSpec) -> bool:
    return spec.name == "worker" or spec.name.removeprefix("worker").isdigit()


def _celery(python: str) -> tuple[str, ...]:
    return (python, "-m", "celery", "-A", CELERY_APP)


def connect_host(host: str) -> str:
    """Where a client on this machine reaches a server bound to ``host``."""
    return LOOPBACK if host in ("0.0.0.0", "::", "") else host


def answers(url: str) -> bool:
    """True once ``url`` answers HTTP with anything but a server error."""
    try:
        with urllib.request.urlopen(url, timeout=1):
            return True
    except urllib.error.HTTPError as error:
        return error.code < 500
    except (OSError, ValueError):
        return False


def start(
    spec: ProcessSpec, *, env: Mapping[str, str], log_path: Path, cwd: Path = ROOT
) -> subprocess.Popen:
    """Start ``spec`` in its own session (so stop() takes its pool processes too), its output
    in ``log_path`` (written afresh)."""
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            spec.argv, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


def wait_ready(
    spec: ProcessSpec, process: subprocess.Popen, *, log_path: Path, timeout_s: float = 90
) -> None:
    """Poll until ``spec`` is ready; fails at once, with its log's tail, when it exits first."""
    deadline = time.monotonic() + timeout_s
    while True:
        if process.poll() is not None:
            raise RuntimeError(
                f"{spec.name} exited with code {process.returncode} while starting:\n"
                f"{_tail(log_path)}"
            )
        if spec.ready_url and answers(spec.ready_url):
            return
        if spec.ready_line and spec.ready_line in log_path.read_text(errors="replace"):
            return
        if not (spec.ready_url or spec.ready_line):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{spec.name} not ready within {timeout_s:.0f} s:\n{_tail(log_path)}"
            )
        time.sleep(0.1)


def stop(process: subprocess.Popen, *, grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM the process's whole group, SIGKILL it after ``grace_s``; safe on a dead process."""
    signal_group(process, signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        signal_group(process, signal.SIGKILL)
        process.wait()
    # Pool processes may outlive their leader for a moment; the group goes with it.
    signal_group(process, signal.SIGKILL)


def signal_group(process: subprocess.Popen, signum: int) -> None:
    # The group id is the leader's pid (start_new_session).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


@contextlib.contextmanager
def running(
    spec: ProcessSpec,
    *,
    env: Mapping[str, str],
    log_path: Path | None = None,
    timeout_s: float = 90,
) -> Iterator[subprocess.Popen]:
    """``spec`` running and ready for the block, stopped (with its group) after it. Without
    ``log_path`` its output goes to a temporary file, removed afterwards."""
    with contextlib.ExitStack() as cleanup:
        if log_path is None:
            log_dir = cleanup.enter_context(tempfile.TemporaryDirectory(prefix="kandev-proc-"))
            log_path = Path(log_dir) / f"{spec.name}.log"
        process = start(spec, env=env, log_path=log_path)
        cleanup.callback(stop, process)
        wait_ready(spec, process, log_path=log_path, timeout_s=timeout_s)
        yield process


def _tail(log_path: Path, *, lines: int = 30) -> str:
    if not log_path.exists():
        return "(no output)"
    return "\n".join(log_path.read_text(errors="replace").splitlines()[-lines:])
