"""A prompt's timeout that stops running while a person is asked for a permission.

The deadline is ``start + limit + paused`` where ``paused`` is the time spent waiting for a person,
counted up to ``pause_budget_s`` (the app sets it to its approval timeout, so a turn still ends
within its worker's limits however long people take). Pauses nest: two requests asked at once
pause it once. ``changed`` wakes the waiter whenever a pause begins or ends, so it re-reads the
deadline against the injected clock instead of trusting a timer set before the pause.
"""

from __future__ import annotations

import asyncio

from recovery.clock import Clock


class PausableDeadline:
    def __init__(
        self, *, limit_s: float | None, clock: Clock, pause_budget_s: float | None = None
    ) -> None:
        self._limit_s = limit_s
        self._clock = clock
        self._budget_s = pause_budget_s
        self._start = clock.monotonic()
        self._paused_s = 0.0  # finished pauses
        self._pause_began: float | None = None
        self._depth = 0
        self.changed = asyncio.Event()

    @property
    def paused(self) -> bool:
        return self._depth > 0

    def pause(self) -> None:
        self._depth += 1
        if self._depth == 1:
            self._pause_began = self._clock.monotonic()
            self.changed.set()

    def resume(self) -> None:
        if self._depth == 0:
            return
        self._depth -= 1
        if self._depth == 0 and self._pause_began is not None:
            self._paused_s += self._clock.monotonic() - self._pause_began
            self._pause_began = None
            self.changed.set()

    def remaining(self) -> float | None:
        """Seconds until the prompt times out if nothing changes; None: it never does."""
        if self._limit_s is None:
            return None
        if self.paused:
            # The pause goes on until its budget is spent (or forever without a budget).
            if self._budget_s is None:
                return None
            credited = self._budget_s
        else:
            credited = (
                self._paused_s if self._budget_s is None else min(self._paused_s, self._budget_s)
            )
        elapsed = self._clock.monotonic() - self._start
        return self._limit_s + credited - elapsed

    def expired(self) -> bool:
        remaining = self.remaining()
        return remaining is not None and remaining <= 0
