"""Notice a Stop pressed in another process while the worker is busy streaming, and tell the
other processes this worker is still alive.

The Stop button writes ``stop_requested`` on the generation row (the database is the one place
every process shares). One watcher thread per worker process polls that flag for every turn the
process runs, in one query per poll, and trips each stopped turn's cancel token, which aborts a
provider stream within about 100 ms even while it is blocked waiting for bytes. The same thread
writes the heartbeat of all of them every few seconds, in one UPDATE; the reaper ends a running
generation whose heartbeat went silent (its worker was killed).

One thread and one pooled connection for the whole process, not one per turn: a worker running
200 turns at once would otherwise hold 200 more connections and poll 200 times as often.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Protocol, Self

from sessions_app.db_connections import connection_release
from sessions_app.services import generation_heartbeat, generations_stop_requested

HEARTBEAT_INTERVAL_S = 5.0

logger = logging.getLogger(__name__)


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class _Watch:
    """The process's one watcher thread and the turns it watches (generation id -> token)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watched: dict[int, tuple[Cancellable, float]] = {}
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._pid = 0

    def add(self, generation_id: int, cancel: Cancellable, poll_interval_s: float) -> None:
        with self._lock:
            self._watched[generation_id] = (cancel, poll_interval_s)
            # A forked pool process inherits the object but not the thread.
            if self._thread is None or not self._thread.is_alive() or self._pid != os.getpid():
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._run, name="stop-watch", daemon=True)
                self._thread.start()
            self._wake.notify()

    def remove(self, generation_id: int) -> None:
        with self._lock:
            self._watched.pop(generation_id, None)

    def _interval(self) -> float | None:
        intervals = [interval for _, interval in self._watched.values()]
        return min(intervals) if intervals else None

    def _run(self) -> None:
        last_beat = time.monotonic()
        while True:
            with self._lock:
                while not self._watched:
                    self._wake.wait()
                self._wake.wait(self._interval())
                watched = dict(self._watched)
            if not watched:
                continue
            try:
                for generation_id in generations_stop_requested(generation_ids=list(watched)):
                    cancel, _ = watched[generation_id]
                    self.remove(generation_id)
                    cancel.cancel()
                if time.monotonic() - last_beat >= HEARTBEAT_INTERVAL_S:
                    generation_heartbeat(generation_ids=list(watched))
                    last_beat = time.monotonic()
            except Exception:
                logger.warning("stop watcher failed; polling again", exc_info=True)
            finally:
                connection_release()


_watch = _Watch()


class StopWatcher:
    """Watch one turn's generation for the duration of a ``with`` block."""

    def __init__(self, *, generation_id: int, cancel: Cancellable, poll_interval_s: float) -> None:
        self._generation_id = generation_id
        self._cancel = cancel
        self._interval = poll_interval_s

    def __enter__(self) -> Self:
        _watch.add(self._generation_id, self._cancel, self._interval)
        return self

    def __exit__(self, *exc_info: object) -> None:
        _watch.remove(self._generation_id)
