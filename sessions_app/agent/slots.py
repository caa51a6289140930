"""Agent slots: how many ACP agent processes may run at once on one worker box.

An agent (Claude Code, Codex, Gemini CLI) is a heavy subprocess tree, hundreds of MB each, so
agents are limited apart from the worker's threads, per box rather than per worker process: every
worker on the box takes a slot from the same directory (KANDEV_ACP_SLOT_DIR), one lock file per
slot (KANDEV_ACP_MAX_AGENTS of them), held with ``flock`` for the whole turn. The kernel lets go of
a lock when its holder dies, so a killed worker never leaks a slot. A free slot is taken only
while the box has KANDEV_ACP_MIN_FREE_MB of memory available (MemAvailable in /proc/meminfo).

A turn that finds no slot does not wait on a worker thread: it stays queued, visibly ("waiting for
an agent slot"), and its task comes back after KANDEV_ACP_SLOT_WAIT_S (sessions_app/agent/runner.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

MEMINFO = Path("/proc/meminfo")


@dataclass(frozen=True, slots=True)
class AgentSlot:
    number: int
    fd: int

    def release(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)  # closing the file lets go of its lock


def memory_available_mb(*, meminfo: Path = MEMINFO) -> int | None:
    """The box's available memory in MB, or None where the kernel doesn't say."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def agent_slot_take(
    *, directory: Path, count: int, min_free_mb: int, meminfo: Path = MEMINFO
) -> AgentSlot | None:
    """A free slot, held until ``release()``; None when all ``count`` are taken or the box is
    short of memory."""
    if min_free_mb:
        available = memory_available_mb(meminfo=meminfo)
        if available is not None and available < min_free_mb:
            return None
    directory.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        fd = os.open(directory / f"slot-{number}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return AgentSlot(number=number, fd=fd)
    return None


def agent_slots_taken(*, directory: Path, count: int) -> int:
    """How many of the box's slots are held right now (for tests and the operator)."""
    taken = 0
    for number in range(count):
        path = directory / f"slot-{number}.lock"
        if not path.exists():
            continue
        fd = os.open(path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
        except BlockingIOError:
            taken += 1
        finally:
            os.close(fd)
    return taken
