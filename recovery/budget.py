"""One retry budget per prompt turn, shared by every layer so attempts never multiply.

Two clocks bound automatic recovery. The deadline (``deadline_s``) runs per model call, from that
call's first failure: a tool-using turn that fails on its third model call, minutes in, still gets
the whole ladder for that call. The turn cap (``turn_cap_s``) runs from the start of the turn and
bounds every call's recovery together, so a turn that keeps failing call after call still ends.
Attempts count per call too: a call that succeeded leaves the next one a fresh ladder.

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
DEFAULT_DEADLINE_S = 150.0
# A turn's automatic recovery ends this long after the turn started (at least one deadline).
DEFAULT_TURN_CAP_S = 600.0


@dataclass(frozen=True, slots=True)
class RetrySettings:
    delays_s: tuple[float, ...] = DEFAULT_DELAYS_S
    # Automatic retries after the first call: one per ladder step by default, so every delay of
    # the ladder is used and the banner reads "attempt 1 of 5" on the first retry.
    max_attempts: int = 5
    jitter: float = 0.2  # each ladder delay moves by up to +-20 % so clients do not synchronise
    deadline_s: float = DEFAULT_DEADLINE_S  # recovery of one model call, from its first failure
    # A Retry-After floor never holds a turn longer than this (KANDEV_RETRY_AFTER_CAP_S): a turn's
    # own, and a target's shared hold from another call, are judged against the same cap.
    retry_after_cap_s: float = 60.0
    # Automatic recovery of a whole turn, from the turn's start; None: DEFAULT_TURN_CAP_S or the
    # deadline, whichever is longer.
    turn_cap_s: float | None = None

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
        if self.turn_cap_s is not None and (
            _bad_number(self.turn_cap_s) or self.turn_cap_s < self.deadline_s
        ):
            raise ValueError("turn_cap_s must be at least deadline_s")

    @property
    def turn_cap(self) -> float:
        """Seconds of automatic recovery a whole turn may use."""
        if self.turn_cap_s is not None:
            return self.turn_cap_s
        return max(DEFAULT_TURN_CAP_S, self.deadline_s)

    def delay_after_s(self, failed_attempt: int) -> float:
        """The un-jittered wait after attempt k failed: ``delays_s[k-1]``, the last one
        repeating."""
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
        if (raw := environ.get("KANDEV_RETRY_AFTER_CAP_S")) is not None and raw.strip():
            cap = _parse_float("KANDEV_RETRY_AFTER_CAP_S", raw)
            if cap < 0:
                raise ValueError(f"KANDEV_RETRY_AFTER_CAP_S must be zero or more, got {raw!r}")
            kwargs["retry_after_cap_s"] = cap
        if (raw := environ.get("KANDEV_RETRY_TURN_CAP")) is not None:
            cap = _parse_float("KANDEV_RETRY_TURN_CAP", raw)
            deadline = kwargs.get("deadline_s", DEFAULT_DEADLINE_S)
            if cap < deadline:
                raise ValueError(
                    f"KANDEV_RETRY_TURN_CAP must be at least KANDEV_RETRY_DEADLINE "
                    f"({deadline:g} s), got {raw!r}"
                )
            kwargs["turn_cap_s"] = cap
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "delays_s": list(self.delays_s),
            "max_attempts": self.max_attempts,
            "jitter": self.jitter,
            "deadline_s": self.deadline_s,
            "retry_after_cap_s": self.retry_after_cap_s,
            "turn_cap_s": self.turn_cap_s,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RetrySettings:
        return cls(
            delays_s=tuple(float(d) for d in data["delays_s"]),
            max_attempts=int(data["max_attempts"]),
            jitter=float(data["jitter"]),
            deadline_s=float(data["deadline_s"]),
            retry_after_cap_s=float(data["retry_after_cap_s"]),
            # Budgets persisted before the turn cap existed get the default.
            turn_cap_s=None if data.get("turn_cap_s") is None else float(data["turn_cap_s"]),
        )


@dataclass(frozen=True, slots=True)
class Budget:
    """Attempts, waits and targets spent on one prompt turn.

    ``start`` opens the budget on the first target without counting an attempt; the driver calls
    ``record_attempt`` right before every provider call (the first one included), the judge
    ``record_failure`` when a call failed (which starts that call's deadline), and the app
    ``record_call_success`` when a call reached its terminal event (the next call starts afresh).
    """

    settings: RetrySettings
    started_at: float  # epoch seconds: when the turn started (the turn cap counts from here)
    attempts: int = 0  # attempts of the current model call started so far
    waited_s: float = 0.0
    visited_targets: tuple[str, ...] = field(default=())
    call_failed_at: float | None = None  # epoch seconds of the current call's first failure

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

    def record_failure(self, *, clock: Clock) -> Budget:
        """The current call failed: its deadline starts now, unless an earlier failure of the
        same call started it already."""
        if self.call_failed_at is not None:
            return self
        return replace(self, call_failed_at=clock.now())

    def record_call_success(self) -> Budget:
        """The current call reached its terminal event: the next call gets a fresh ladder (its
        own attempts and deadline); the turn cap keeps counting. The next call's first attempt
        is counted here, as ``turn_budget`` counts a turn's first call, because nothing else
        records it before it may fail."""
        return replace(self, attempts=1, call_failed_at=None)

    def elapsed_s(self, *, clock: Clock) -> float:
        """Seconds the current call has spent recovering (since its first failure)."""
        since = self.call_failed_at if self.call_failed_at is not None else clock.now()
        return max(clock.now() - since, 0.0)

    def turn_elapsed_s(self, *, clock: Clock) -> float:
        return max(clock.now() - self.started_at, 0.0)

    def remaining_s(self, *, clock: Clock) -> float:
        """Seconds automatic recovery may still use: the call's deadline or the turn's cap,
        whichever ends first."""
        return max(min(self.call_remaining_s(clock=clock), self.turn_remaining_s(clock=clock)), 0.0)

    def call_remaining_s(self, *, clock: Clock) -> float:
        return max(self.settings.deadline_s - self.elapsed_s(clock=clock), 0.0)

    def turn_remaining_s(self, *, clock: Clock) -> float:
        return max(self.settings.turn_cap - self.turn_elapsed_s(clock=clock), 0.0)

    def turn_cap_binds(self, *, clock: Clock) -> bool:
        """Whether the turn's cap, not the call's deadline, is what ends recovery first."""
        return self.turn_remaining_s(clock=clock) < self.call_remaining_s(clock=clock)

    @property
    def attempts_left(self) -> int:
        """Retries of the current call still allowed."""
        return max(self.settings.max_attempts - self.retries, 0)

    @property
    def retries(self) -> int:
        """Retries of the current call started so far: every attempt after its first."""
        return max(self.attempts - 1, 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "settings": self.settings.to_dict(),
            "started_at": self.started_at,
            "attempts": self.attempts,
            "waited_s": self.waited_s,
            "visited_targets": list(self.visited_targets),
            "call_failed_at": self.call_failed_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Budget:
        # A budget persisted before per-call deadlines counted from the turn's start.
        failed_at = data.get("call_failed_at", data["started_at"])
        return cls(
            settings=RetrySettings.from_dict(data["settings"]),
            started_at=float(data["started_at"]),
            attempts=int(data["attempts"]),
            waited_s=float(data["waited_s"]),
            visited_targets=tuple(str(t) for t in data["visited_targets"]),
            call_failed_at=None if failed_at is None else float(failed_at),
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
