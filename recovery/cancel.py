"""Cancellation: one switch shared by a stream, an agent prompt, a wait and the Cancel button."""

from __future__ import annotations

import threading
from collections.abc import Callable


class CancelToken:
    """A one-way switch shared by a stream, a backoff wait and whoever presses Cancel."""

    __slots__ = ("_callbacks", "_event", "_lock")

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], object]] = []

    def cancel(self) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks = list(self._callbacks)
        for callback in callbacks:
            callback()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block up to ``timeout`` seconds; True as soon as (or if already) cancelled."""
        return self._event.wait(timeout)

    def on_cancel(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Run ``callback`` on cancel (at once if already cancelled); returns an unsubscribe."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return lambda: self._discard(callback)
        callback()
        return lambda: None

    def _discard(self, callback: Callable[[], object]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)
