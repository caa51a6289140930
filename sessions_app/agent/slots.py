"""Agent slots: how many ACP agent processes may run at once on one worker box.

An agent (Claude Code, Codex, Gemini CLI) is a heavy subprocess tree, hundreds of MB each, so
agents are limited apart from the worker's threads, per box rather than per worker process: every
worker on the box takes a slot from the same directory (KANDEV_ACP_SLOT_DIR), one lock file per
slot (KANDEV_ACP_MAX_AGENTS of them), held with ``flock`` for the whole turn. The kernel lets go of
a lock when its holder dies, so a killed worker never leaks a slot. A free slot is taken only
while the box has KANDEV_ACP_MIN_FREE_MB of memory available (MemAvailable in /proc/meminfo).

A turn that finds no slot does not wait on a worker thread: it stays queued, visibly ("waiting
for an agent slot"), and its task comes back after KANDEV_ACP_SLOT_WAIT_S
(sessions_app/agent/runner.py).

Slots are shared fairly between people (``fair_share_allows``): a taker writes who it takes the
slot for into the lock file it holds, so every process of the box can tell who holds what, and a
dead holder's entry goes with its lock (an unlocked file's content is ignored). Deciding and
taking happen under one more lock (``agent_slots_deciding``), so two takers never both see the
same free share.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

MEMINFO = Path("/proc/meminfo")
DECIDING_LOCK = "deciding.lock"
HOLDER_BYTES = 64


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
    *, directory: Path, count: int, min_free_mb: int, holder: str = "", meminfo: Path = MEMINFO
) -> AgentSlot | None:
    """A free slot, held until ``release()``, labelled with ``holder`` (who it runs for); None when
    all ``count`` are taken or the box is short of memory."""
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
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder.encode()[:HOLDER_BYTES], 0)
        return AgentSlot(number=number, fd=fd)
    return None


@contextlib.contextmanager
def agent_slots_deciding(*, directory: Path) -> Iterator[None]:
    """Hold the box's deciding lock: who may take a slot is decided, and the slot taken, by one
    taker at a time (threads and processes alike; the kernel lets go if the holder dies)."""
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / DECIDING_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def agent_slot_holders(*, directory: Path, count: int) -> list[str]:
    """Who holds each slot that is held right now (the label its taker wrote), one entry per
    held slot. A file nobody holds is skipped whatever it says: its holder let go, or died."""
    holders = []
    for number in range(count):
        path = directory / f"slot-{number}.lock"
        if not path.exists():
            continue
        fd = os.open(path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
        except BlockingIOError:
            holders.append(os.pread(fd, HOLDER_BYTES, 0).decode(errors="replace"))
        finally:
            os.close(fd)
    return holders


def fair_share_allows(
    *, person: str, holders: Sequence[str], waiting: Collection[str], count: int
) -> bool:
    """May ``person`` take one more of the box's ``count`` slots?

    Their share is ceil(count / people with running or waiting agent turns), the person included.
    Under it, yes. At or over it, only when nobody else waiting is still under theirs: a slot is
    never kept from someone owed one, and never left idle while only people at their share wait.
    ``holders`` is one entry per held slot (``agent_slot_holders``), ``waiting`` the people with
    agent turns waiting to start."""
    held = Counter(holders)
    others_waiting = set(waiting) - {person}
    people = set(held) | others_waiting | {person}
    share = math.ceil(count / len(people))
    if held[person] < share:
        return True
    return not any(held[other] < share for other in others_waiting)


def agent_slots_taken(*, directory: Path, count: int) -> int:
    """How many of the box's slots are held right now (for tests and the operator)."""
    return len(agent_slot_holders(directory=directory, count=count))
