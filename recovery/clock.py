"""Injected time: everything that waits, counts down or measures a deadline takes a Clock.

Wall-clock ``now()`` is what budgets and ``retry_at`` use, because they are persisted and read by
other processes (and by browsers); ``monotonic()`` is for measuring durations inside one process.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float: ...

    def monotonic(self) -> float: ...


class SystemClock:
    """The real clock."""

    __slots__ = ()

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


class FakeClock:
    """A clock that moves only when told, so tests of backoff and deadlines are exact and fast."""

    __slots__ = ("_monotonic", "_now")

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = float(start)
        self._monotonic = 0.0

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._monotonic

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        self._now += seconds
        self._monotonic += seconds

    def set(self, epoch: float) -> None:
        # Wall clocks may jump (NTP); the monotonic reading deliberately does not follow.
        self._now = float(epoch)
