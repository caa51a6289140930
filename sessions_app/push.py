"""Push a persisted session event to the session's channel group.

Pushing is a hint to live viewers; the database is the truth. A push that fails is logged and
dropped: a viewer that missed it catches up from Postgres by seq on its next resume.

Pushes from sync code (a worker's turn threads, a view) all go through one event loop per
process, run by a thread of its own, so the channel layer keeps one pool of Redis connections
for the process. ``async_to_sync`` outside an event loop would start a fresh loop for every call
and, with it, a fresh Redis connection: with hundreds of turns streaming on threads that is
thousands of connects a second. Each push still waits for its send (ordered per turn, bounded by
PUSH_TIMEOUT_S).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
import time
from typing import Any

from channels.layers import get_channel_layer

from sessions_app import metrics
from sessions_app.events import board_group_name, group_name

logger = logging.getLogger(__name__)

# An unreachable Redis must not stall the worker's stream for its reconnect attempts: a push
# that can't be delivered quickly is dropped, and viewers catch up from the log.
PUSH_TIMEOUT_S = 0.5


class _PushLoop:
    """This process's push loop, started on first use (again in a forked child)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                self._pid = os.getpid()
                self._loop = asyncio.new_event_loop()
                threading.Thread(
                    target=self._loop.run_forever, name="session-push", daemon=True
                ).start()
            return self._loop


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
    try:
        layer = get_channel_layer()
        if layer is None:
            return
        message = group_message(seq=seq, event=event, payload=payload)
        _send_and_wait(layer, group_name(session_id), message)
    except Exception:
        logger.warning("push of session %s seq %s failed", session_id, seq, exc_info=True)
        return
    if written_at is not None:
        metrics.observe(metrics.PUSH_LATENCY_SECONDS, time.monotonic() - written_at)


def board_push(*, owner_id: int) -> None:
    """Tell the owner's open boards to re-read their tasks. A lost hint costs that board only
    freshness until the next one (or a reload): the database is the truth."""
    try:
        layer = get_channel_layer()
        if layer is None:
            return
        _send_and_wait(layer, board_group_name(owner_id), {"type": "board.changed"})
    except Exception:
        logger.warning("board push to user %s failed", owner_id, exc_info=True)


def _send_and_wait(layer: Any, group: str, message: dict[str, Any]) -> None:
    """Send on the process's push loop and wait for it (raises when it did not go out)."""
    future = asyncio.run_coroutine_threadsafe(_send(layer, group, message), _push_loop.loop())
    try:
        future.result(timeout=PUSH_TIMEOUT_S * 2)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise


async def _send(layer: Any, group: str, message: dict[str, Any]) -> None:
    await asyncio.wait_for(layer.group_send(group, message), timeout=PUSH_TIMEOUT_S)
