"""One retry budget per prompt turn, shared by every layer so attempts never multiply.

The budget is a value: each change returns a new Budget, and the app persists it as JSON between
scheduled attempts (a retry waits in Celery, not in a worker's memory). Deadlines use the wall
clock for the same reason: another process must be able to read how much time is left.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from recovery.clock import Clock

DEFAULT_DELAYS_S: tuple[float, ...] = (5.0, 10.0, 20.0, 40.0, 60.0)


@dataclass(frozen=True, slots=True)
class RetrySettings:
    delays_s: tuple[float, ...] = DEFAULT_DELAYS_S
    # Automatic retries after the first call: one per ladder step by default, so every delay of
    # the ladder is used and the banner reads "attempt 1 of 5" on the first retry.
    max_attempts: int = 5
    jitter: float = 0.2  # each ladder delay moves by up to +-20 % so clients do not synchronise
    deadline_s: float = 150.0  # wall-clock limit for automatic recovery of one turn
    retry_after_cap_s: float = 60.0  # a Retry-After floor never holds a turn longer than this

    def __post_init__(self) -> None:
        if not self.delays_s or any(_bad_number(d) or d < 0 for d in self.delays_s):
            raise ValueError("delays_s must be one or more non-negative numbers")
        if self.max_attempts < 0:
            raise ValueError("max_attempts must be zero or more")
        if _bad_number(self.jitter) or not 0 <= self.jitter < 1:
            raise ValueError("jitter must be in [0, 1)")
        if _bad_number(self.deadline_s) or self.deadline_s <= 0:
            raise ValueError("deadline_s must be positive")
        if _bad_number(self.retry_after_cap_s) or self.retry_after_cap_s < 0:
            raise ValueError("retry_after_cap_s must be non-negative")

    def delay_after_s(self, failed_attempt: int) -> float:
        """The un-jittered wait after attempt k failed: ``delays_s[k-1]``, the last one repeating."""
        index = max(failed_attempt - 1, 0)
        return self.delays_s[min(index, len(self.delays_s) - 1)]

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> RetrySettings:
        kwargs: dict[str, Any] = {}
        if (raw := environ.get("KANDEV_RETRY_DELAYS")) is not None:
            kwargs["delays_s"] = _parse_delays(raw)
        if (raw := environ.get("KANDEV_RETRY_MAX_ATTEMPTS")) is not None:
            kwargs["max_attempts"] = _parse_int("KANDEV_RETRY_MAX_ATTEMPTS", raw, minimum=0)
        if (raw := environ.get("KANDEV_RETRY_JITTER")) is not None:
            jitter = _parse_float("KANDEV_RETRY_JITTER", raw)
            if not 0 <= jitter < 1:
                raise ValueError(f"KANDEV_RETRY_JITTER must be in [0, 1), got {raw!r}")
            kwargs["jitter"] = jitter
        if (raw := environ.get("KANDEV_RETRY_DEADLINE")) is not None:
            deadline = _parse_float("KANDEV_RETRY_DEADLINE", raw)
            if deadline <= 0:
                raise ValueError(f"KANDEV_RETRY_DEADLINE must be positive, got {raw!r}")
            kwargs["deadline_s"] = deadline
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "delays_s": list(self.delays_s),
            "max_attempts": self.max_attempts,
            "jitter": self.jitter,
            "deadline_s": self.deadline_s,
            "retry_after_cap_s": self.retry_after_cap_s,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RetrySettings:
        return cls(
            delays_s=tuple(float(d) for d in data["delays_s"]),
            max_attempts=int(data["max_attempts"]),
            jitter=float(data["jitter"]),
            deadline_s=float(data["deadline_s"]),
            retry_after_cap_s=float(data["retry_after_cap_s"]),
        )


@dataclass(frozen=True, slots=True)
class Budget:
    """Attempts, waits and targets spent on one prompt turn.

    ``start`` opens the budget on the first target without counting an attempt; the driver calls
    ``record_attempt`` right before every provider call (the first one included).
    """

    settings: RetrySettings
    started_at: float  # epoch seconds
    attempts: int = 0  # attempts started so far
    waited_s: float = 0.0
    visited_targets: tuple[str, ...] = field(default=())

    @classmethod
    def start(cls, *, settings: RetrySettings, clock: Clock, target: str) -> Budget:
        return cls(settings=settings, started_at=clock.now(), visited_targets=(target,))

    def record_attempt(self, *, target: str) -> Budget:
        visited = self.visited_targets
        if target not in visited:
            visited = (*visited, target)
        return replace(self, attempts=self.attempts + 1, visited_targets=visited)

    def unrecord_attempt(self) -> Budget:
        """Give back an attempt recorded for a call that was never made (the target's shared
        health held it back before it started)."""
        return replace(self, attempts=max(self.attempts - 1, 0))

    def record_wait(self, seconds: float) -> Budget:
        if _bad_number(seconds) or seconds < 0:
            raise ValueError("a wait must be a non-negative number of seconds")
        return replace(self, waited_s=self.waited_s + seconds)

    def elapsed_s(self, *, clock: Clock) -> float:
        return max(clock.now() - self.started_at, 0.0)

    def remaining_s(self, *, clock: Clock) -> float:
        return max(self.settings.deadline_s - self.elapsed_s(clock=clock), 0.0)

    @property
    def attempts_left(self) -> int:
        """Retries still allowed."""
        return max(self.settings.max_attempts - self.retries, 0)

    @property
    def retries(self) -> int:
        """Retries started so far: every attempt after the first."""
        return max(self.attempts - 1, 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "settings": self.settings.to_dict(),
            "started_at": self.started_at,
            "attempts": self.attempts,
            "waited_s": self.waited_s,
            "visited_targets": list(self.visited_targets),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Budget:
        return cls(
            settings=RetrySettings.from_dict(data["settings"]),
            started_at=float(data["started_at"]),
            attempts=int(data["attempts"]),
            waited_s=float(data["waited_s"]),
            visited_targets=tuple(str(t) for t in data["visited_targets"]),
        )


def _bad_number(value: float) -> bool:
    return isinstance(value, bool) or not math.isfinite(value)


def _parse_delays(raw: str) -> tuple[float, ...]:
    parts = [p.strip() for p in raw.split(",")]
    try:
        delays = tuple(float(p) for p in parts)
    except ValueError:
        raise ValueError(
            f"KANDEV_RETRY_DELAYS must be comma-separated seconds, got {raw!r}"
        ) from None
    if not delays or any(not math.isfinite(d) or d < 0 for d in delays):
        raise ValueError(f"KANDEV_RETRY_DELAYS must be non-negative seconds, got {raw!r}")
    return delays


def _parse_int(name: str, raw: str, *, minimum: int) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {raw!r}")
    return value


def _parse_float(name: str, raw: str) -> float:
    try:
        value = float(raw.strip())
    except ValueError:
        raise ValueError(f"{name} must be a number, got {raw!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {raw!r}")
    return value
