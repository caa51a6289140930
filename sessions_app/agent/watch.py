"""Notice a Stop pressed in another process while the worker is busy streaming, and tell the
other processes this worker is still alive.

The Stop button writes ``stop_requested`` on the generation row (the database is the one place
every process shares). A small thread polls that flag and trips the cancel token, which aborts a
provider stream within about 100 ms even while it is blocked waiting for bytes. The same thread
writes the generation's heartbeat every few seconds; the reaper ends a running generation whose
heartbeat went silent (its worker was killed).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Protocol, Self

from django.db import connection

from sessions_app.services import generation_heartbeat, generation_stop_requested

HEARTBEAT_INTERVAL_S = 5.0

logger = logging.getLogger(__name__)


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class StopWatcher:
    def __init__(self, *, generation_id: int, cancel: Cancellable, poll_interval_s: float) -> None:
        self._generation_id = generation_id
        self._cancel = cancel
        self._interval = poll_interval_s
        self._done = threading.Event()
        self._thread = threading.Thread(
            target=self._watch, name=f"stop-watch-{generation_id}", daemon=True
        )

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._done.set()
        self._thread.join()

    def _watch(self) -> None:
        last_beat = time.monotonic()
        try:
            while not self._done.wait(self._interval):
                if generation_stop_requested(generation_id=self._generation_id):
                    self._cancel.cancel()
                    return
                if time.monotonic() - last_beat >= HEARTBEAT_INTERVAL_S:
                    generation_heartbeat(generation_id=self._generation_id)
                    last_beat = time.monotonic()
        except Exception:
            logger.warning(
                "stop watcher for generation %s failed", self._generation_id, exc_info=True
            )
        finally:
            connection.close()  # this thread's own connection
