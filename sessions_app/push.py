"""Push a persisted session event to the session's channel group.

Pushing is a hint to live viewers; the database is the truth. A push that fails is logged and
dropped: a viewer that missed it catches up from Postgres by seq (on its next resume, or when its
socket goes quiet).

Pushes from sync code (a worker's turn threads, a view) all go through one event loop per
process, run by a thread of its own, so the channel layer keeps one pool of Redis connections
for the process. ``async_to_sync`` outside an event loop would start a fresh loop for every call
and, with it, a fresh Redis connection: with hundreds of turns streaming on threads that is
thousands of connects a second.

The caller does not wait for its push to go out: a turn starting, or a streaming flush, goes on
with its work (and hands its database connection back) while the loop sends. One sender on the
loop takes every push waiting and sends them together (``group_send_many``: two Redis round
trips per batch, kandev_web/channel_layer.py), in the order they were made, so one group's events
keep theirs. At most MAX_IN_FLIGHT pushes are outstanding per process; a caller that finds them
all taken waits for room, so a loop that falls behind slows the writers down instead of piling up
pushes that could only time out.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

from channels.layers import get_channel_layer

from sessions_app import metrics
from sessions_app.event_types import board_group_name, group_name

logger = logging.getLogger(__name__)

# An unreachable Redis must not hold pushes for its reconnect attempts: a batch that can't be
# delivered quickly is dropped, and viewers catch up from the log.
PUSH_TIMEOUT_S = 0.5
# Outstanding pushes per process. Well above what one batch holds at 200 streaming sessions
# (about 100 flushes a second, a batch every few ms); few enough that a stalled Redis holds back
# the writers within a fraction of a second.
MAX_IN_FLIGHT = 64
# Push latency is observed per push; its histogram goes to Redis at most this often.
LATENCY_WRITE_EVERY_S = 1.0


@dataclass(frozen=True, slots=True)
class _Push:
    layer: Any
    group: str
    message: dict[str, Any]
    # The warning logged when it did not go out: a format and its arguments, formatted only then
    # (a push is made for every event).
    failed: tuple[Any, ...]
    written_at: float | None = None  # time.monotonic() of the write, for the latency metric


class _PushLoop:
    """This process's push loop and its one sender, started on first use (again in a forked
    child)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0
        self._latency = metrics.Batch(every_s=LATENCY_WRITE_EVERY_S)
        self._fresh()

    def _fresh(self) -> None:
        """The state of one process's loop (a forked child starts its own)."""
        self._room = threading.BoundedSemaphore(MAX_IN_FLIGHT)
        # Loop thread only.
        self._waiting: collections.deque[_Push] = collections.deque()
        self._unsent = 0
        self._more = asyncio.Event()
        self._idle = asyncio.Event()

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                self._pid = os.getpid()
                self._fresh()
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._run, args=(self._loop,), name="session-push",
                                 daemon=True).start()  # fmt: skip
            return self._loop

    def send(self, push: _Push) -> None:
        """Hand ``push`` to the sender; returns once it is queued (after waiting for room)."""
        loop = self.loop()
        self._room.acquire()
        try:
            loop.call_soon_threadsafe(self._queue, push)
        except RuntimeError:  # the loop is closed (interpreter shutting down)
            self._room.release()
            raise

    def drain(self, *, timeout_s: float) -> bool:
        """Wait until every push handed over so far has gone out or failed, and write the
        latency observed. False on timeout."""
        if self._loop is None or self._pid != os.getpid():
            return True
        done = asyncio.run_coroutine_threadsafe(self._all_sent(), self._loop)
        try:
            done.result(timeout=timeout_s)
        except TimeoutError:
            done.cancel()
            return False
        self._latency.write()
        return True

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        sender = loop.create_task(self._sender())  # referenced until the loop ends
        loop.run_forever()
        sender.cancel()

    def _queue(self, push: _Push) -> None:
        self._waiting.append(push)
        self._unsent += 1
        self._idle.clear()
        self._more.set()

    async def _sender(self) -> None:
        while True:
            await self._more.wait()
            self._more.clear()
            batch = list(self._waiting)
            self._waiting.clear()
            try:
                # One layer in practice; a test that swaps the settings may leave two in a row.
                for layer, pushes in itertools.groupby(batch, key=lambda push: push.layer):
                    await self._deliver(layer, list(pushes))
            finally:
                for _ in batch:
                    self._room.release()
                self._unsent -= len(batch)
                if not self._unsent:
                    self._idle.set()

    async def _deliver(self, layer: Any, pushes: list[_Push]) -> None:
        sends = [(push.group, push.message) for push in pushes]
        many = getattr(layer, "group_send_many", None)
        try:
            if many is not None:
                await asyncio.wait_for(many(sends), PUSH_TIMEOUT_S)
            else:
                for group, message in sends:
                    await asyncio.wait_for(layer.group_send(group, message), PUSH_TIMEOUT_S)
        except Exception:
            logger.warning(*pushes[0].failed, exc_info=True)
            for push in pushes[1:]:
                logger.warning(*push.failed)
            return
        now = time.monotonic()
        due = False
        for push in pushes:
            if push.written_at is not None:
                due |= self._latency.observe(metrics.PUSH_LATENCY_SECONDS, now - push.written_at)
        if due:  # the Redis write blocks: not on the loop
            asyncio.get_running_loop().run_in_executor(None, self._latency.write)

    async def _all_sent(self) -> None:
        while self._unsent:
            await self._idle.wait()


_push_loop = _PushLoop()


def group_message(*, seq: int, event: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"type": "session.event", "seq": seq, "event": event, "payload": payload}


def event_push(
    *,
    session_id: int,
    seq: int,
    event: str,
    payload: dict[str, Any],
    written_at: float | None = None,
) -> None:
    """``written_at``: when the event was written (time.monotonic), for the push latency metric."""
    _push(
        group_name(session_id),
        group_message(seq=seq, event=event, payload=payload),
        failed=("push of session %s seq %s failed", session_id, seq),
        written_at=written_at,
    )


def board_push(*, owner_id: int) -> None:
    """Tell the owner's open boards to re-read their tasks. A lost hint costs that board only
    freshness until the next one (or a reload): the database is the truth."""
    _push(
        board_group_name(owner_id), {"type": "board.changed"},
        failed=("board push to user %s failed", owner_id),
    )  # fmt: skip


def push_drain(*, timeout_s: float = PUSH_TIMEOUT_S * 4) -> bool:
    """Wait for this process's outstanding pushes (a worker shutting down; tests that read what
    a push did). False when they did not all finish in ``timeout_s``."""
    return _push_loop.drain(timeout_s=timeout_s)


def _push(
    group: str,
    message: dict[str, Any],
    *,
    failed: tuple[Any, ...],
    written_at: float | None = None,
) -> None:
    try:
        layer = get_channel_layer()
        if layer is None:
            return
        _push_loop.send(_Push(layer, group, message, failed, written_at))
    except Exception:
        logger.warning(*failed, exc_info=True)


def login_push(*, group: str, message: dict[str, Any]) -> None:
    """Tell the sockets of one login (or one person) that it ended or changed. A lost one costs
    at most KANDEV_WS_LOGIN_CHECK_S: every socket re-checks its login that often anyway."""
    _push(group, message, failed=("login push to %s failed", group))
