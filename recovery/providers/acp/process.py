"""Agent processes: each started in a process group of its own and ended as a whole tree.

Real agents start helpers (a shell for a tool, ripgrep, a relaunched runtime); ending only the
process we started would leave those running. So every agent leads a new session and process
group, and leaving ``agent_process`` ends the group, plus any descendant that left it, whatever
way the prompt ended (answer, failure, stop, cancel, timeout). A worker that shuts down ends the
agents still running (``agent_processes_end_all``), and on Linux an agent also dies with the
thread that started it (PR_SET_PDEATHSIG), so a killed worker leaves no agent behind either.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import psutil
from acp import connect_to_agent
from acp.connection import StreamEvent

_TERM_WAIT_S = 1.0
_PR_SET_PDEATHSIG = 1

_live_lock = threading.Lock()
_live: set[int] = set()  # process group ids of agents still running in this process


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


@asynccontextmanager
async def agent_process(
    client: Any,
    command: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str,
    limit: int,
    observers: Sequence[Callable[[StreamEvent], None]],
    exit_grace_s: float,
) -> AsyncIterator[tuple[Any, asyncio.subprocess.Process]]:
    """Spawn the agent with exactly ``env`` (nothing inherited) and connect to it over stdio."""
    program, *args = command
    process = await asyncio.create_subprocess_exec(
        program,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        limit=limit,
        start_new_session=True,
        preexec_fn=_die_with_parent if sys.platform == "linux" else None,
    )
    with _live_lock:
        _live.add(process.pid)
    conn = connect_to_agent(client, process.stdin, process.stdout, observers=list(observers))
    try:
        yield conn, process
    finally:
        with contextlib.suppress(Exception):
            await conn.close()
        await _end_tree(process, exit_grace_s=exit_grace_s)
        with _live_lock:
            _live.discard(process.pid)


async def _end_tree(process: asyncio.subprocess.Process, *, exit_grace_s: float) -> None:
    # Descendants are found while the leader lives: once it exits they are re-parented and
    # only their process group still ties them to the agent.
    descendants = _descendants(process.pid)
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            process.stdin.close()
    if process.returncode is None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), exit_grace_s)
    if process.returncode is None:
        _signal_group(process.pid, signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), _TERM_WAIT_S)
    tree_kill(process.pid, descendants=descendants + _descendants(process.pid))
    await process.wait()


def tree_kill(pid: int, *, descendants: Sequence[psutil.Process] = ()) -> None:
    """SIGKILL the process group ``pid`` leads and every listed descendant still alive."""
    _signal_group(pid, signal.SIGKILL)
    for child in descendants:
        with contextlib.suppress(psutil.Error):
            child.kill()


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def agent_processes_live() -> frozenset[int]:
    with _live_lock:
        return frozenset(_live)


def agent_processes_end_all() -> int:
    """Kill every agent this process started and has not ended yet (worker shutdown)."""
    with _live_lock:
        groups = sorted(_live)
    for pgid in groups:
        tree_kill(pgid, descendants=_descendants(pgid))
    return len(groups)


class StderrTail:
    """Everything an agent writes to stderr is read (an agent blocked on a full pipe would
    hang); only about the last ``limit_bytes`` are kept, for the message of an agent that
    exited."""

    def __init__(self, *, limit_bytes: int) -> None:
        self._limit = limit_bytes
        self._chunks: deque[bytes] = deque()
        self._size = 0

    async def drain(self, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        while chunk := await stream.read(4096):
            self._chunks.append(chunk)
            self._size += len(chunk)
            while self._size > self._limit and len(self._chunks) > 1:
                self._size -= len(self._chunks.popleft())

    def text(self) -> str:
        return b"".join(self._chunks).decode("utf-8", errors="replace").strip()
