"""Provider health shared by every worker: one circuit and one retry budget per target.

A per-turn budget (``budget.py``) stops one turn from retrying forever; it cannot stop fifty turns
of one overloaded target from each retrying on their own ladder. This module holds what they
share, as a value the app keeps in Redis so every worker on every host reads and writes the same
one:

- **The circuit.** Classified transient failures of the provider itself (overload, outage,
  capacity, rate limit) within a window open it. While open, no call is admitted: turns wait.
  When it has been open long enough, exactly one call is admitted as the half-open probe; the
  others keep waiting for its outcome. The probe's success closes the circuit and releases every
  waiting turn; its failure opens it again for longer (doubling, capped).
- **The retry budget.** Retries admitted per minute are at most ``retry_ratio`` of the requests
  admitted in that minute, with a small floor so a quiet target can still retry (the spirit of
  gRPC's retry throttling and the SRE book's per-client retry budget: retries can never multiply
  an overload by more than 1 + ratio). The turns a successful probe releases are exempt for a
  window: the probe proved the target healthy, and the circuit guards them if it is not.
- **Retry-After.** A provider's Retry-After on any response holds every call to that target until
  it passes, so one session's answer informs every session waiting on the target. The hold keeps
  the wait the provider asked for (bounded only by HOLD_LIMIT_S) and who was told: how long a
  held turn may wait for it is the retry policy's cap, the same one that judges a turn's own
  Retry-After (the app hands a turn back rather than wait past it).

Pure values and functions with the time passed in: the app does the storage (atomically, with an
optimistic Redis transaction) and nothing here reaches Redis, Django or a provider.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from recovery.taxonomy import Code

# Failures that say something about the target, not about one request or one agent process:
# everyone calling this target would see them too. A truncated stream or a dropped agent
# transport is one conversation's bad luck and never opens the circuit for everyone.
CIRCUIT_CODES = frozenset(
    {
        Code.PROVIDER_OVERLOADED,
        Code.PROVIDER_UNAVAILABLE,
        Code.MODEL_CAPACITY,
        Code.RATE_LIMITED,
        Code.PROVIDER_RESOURCE_EXHAUSTED,
        Code.NETWORK_UNAVAILABLE,
    }
)
MINUTE_S = 60.0
# A Retry-After beyond this is not a wait anyone honours (recovery.policy.PROVIDER_WAIT_LIMIT_S).
HOLD_LIMIT_S = 30 * 86_400.0


@dataclass(frozen=True, slots=True)
class HealthSettings:
    enabled: bool = True
    failures_to_open: int = 5  # circuit-worthy failures within window_s that open the circuit
    window_s: float = 30.0
    open_s: float = 10.0  # how long it stays open before one probe; doubles per failed probe
    open_max_s: float = 60.0
    probe_timeout_s: float = 30.0  # a probe not heard of by then is presumed lost: another goes
    retry_ratio: float = 0.2  # retries per minute at most this share of requests per minute
    retry_floor_per_min: int = 10  # ... but always at least this many retries per minute

    def __post_init__(self) -> None:
        if self.failures_to_open < 1:
            raise ValueError("KANDEV_CIRCUIT_FAILURES must be at least 1")
        for name in ("window_s", "open_s", "open_max_s", "probe_timeout_s"):
            value = getattr(self, name)
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"{_ENV_OF[name]} must be a positive number of seconds")
        if self.open_max_s < self.open_s:
            raise ValueError("KANDEV_CIRCUIT_OPEN_MAX_S must be at least KANDEV_CIRCUIT_OPEN_S")
        if not math.isfinite(self.retry_ratio) or not 0 <= self.retry_ratio <= 1:
            raise ValueError("KANDEV_RETRY_BUDGET_RATIO must be between 0 and 1")
        if self.retry_floor_per_min < 0:
            raise ValueError("KANDEV_RETRY_BUDGET_FLOOR must be zero or more")

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> HealthSettings:
        kwargs: dict[str, Any] = {}
        for field in fields(cls):
            raw = environ.get(_ENV_OF[field.name])
            if raw is None or raw.strip() == "":
                continue
            kwargs[field.name] = _parse(_ENV_OF[field.name], raw, field.type)
        return cls(**kwargs)


_ENV_OF = {
    "enabled": "KANDEV_CIRCUIT_ENABLED",
    "failures_to_open": "KANDEV_CIRCUIT_FAILURES",
    "window_s": "KANDEV_CIRCUIT_WINDOW_S",
    "open_s": "KANDEV_CIRCUIT_OPEN_S",
    "open_max_s": "KANDEV_CIRCUIT_OPEN_MAX_S",
    "probe_timeout_s": "KANDEV_CIRCUIT_PROBE_TIMEOUT_S",
    "retry_ratio": "KANDEV_RETRY_BUDGET_RATIO",
    "retry_floor_per_min": "KANDEV_RETRY_BUDGET_FLOOR",
}


def _parse(name: str, raw: str, kind: object) -> bool | int | float:
    # kind is a dataclass field.type: the annotation's text, as annotations are postponed here.
    text = raw.strip().lower()
    if kind == "bool":
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{name} must be true or false, got {raw!r}")
    try:
        return int(text) if kind == "int" else float(text)
    except ValueError:
        noun = "a whole number" if kind == "int" else "a number"
        raise ValueError(f"{name} must be {noun}, got {raw!r}") from None


class CircuitState(enum.StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class Refusal(enum.StrEnum):
    CIRCUIT_OPEN = "circuit_open"
    PROBE_IN_FLIGHT = "probe_in_flight"
    RETRY_AFTER = "retry_after"
    RETRY_BUDGET = "retry_budget"


@dataclass(frozen=True, slots=True)
class TargetHealth:
    """What every worker knows about one target. Stored as a flat string map (a Redis hash)."""

    state: CircuitState = CircuitState.CLOSED
    window_started_at: float = 0.0
    failures: int = 0  # circuit-worthy failures since window_started_at
    open_until: float = 0.0
    reopened: int = 0  # failed probes since it first opened (the cool-down doubles with each)
    probe_until: float = 0.0  # while half-open: when the probe in flight is presumed lost
    last_code: str = ""
    hold_until: float = 0.0  # a Retry-After from any response of this target
    hold_from: float = 0.0  # when it was asked for (the wait asked: hold_until - hold_from)
    hold_by: str = ""  # who was told (the caller's id for it: a session), so others can be told
    minute: int = 0  # the budget's current minute (epoch seconds // 60)
    requests: int = 0  # calls admitted in that minute, retries included
    retries: int = 0
    prev_requests: int = 0  # the minute before, for a sliding estimate
    prev_retries: int = 0
    recovered_at: float = 0.0  # when the circuit last closed after trouble

    def to_dict(self) -> dict[str, str]:
        return {name: str(value) for name, value in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, str]) -> TargetHealth:
        if not data:
            return cls()
        try:
            return cls(
                state=CircuitState(data.get("state", CircuitState.CLOSED)),
                window_started_at=float(data.get("window_started_at", 0)),
                failures=int(data.get("failures", 0)),
                open_until=float(data.get("open_until", 0)),
                reopened=int(data.get("reopened", 0)),
                probe_until=float(data.get("probe_until", 0)),
                last_code=str(data.get("last_code", "")),
                hold_until=float(data.get("hold_until", 0)),
                hold_from=float(data.get("hold_from", 0)),
                hold_by=str(data.get("hold_by", "")),
                minute=int(data.get("minute", 0)),
                requests=int(data.get("requests", 0)),
                retries=int(data.get("retries", 0)),
                prev_requests=int(data.get("prev_requests", 0)),
                prev_retries=int(data.get("prev_retries", 0)),
                recovered_at=float(data.get("recovered_at", 0)),
            )
        except ValueError:
            return cls()  # a hash another version wrote: start afresh rather than fail a turn


@dataclass(frozen=True, slots=True)
class Admission:
    allowed: bool
    refusal: Refusal | None = None
    retry_at: float = 0.0  # when refused: the earliest time worth asking again
    probe: bool = False  # this call is the half-open probe
    code: str = ""  # the failure that made the target unhealthy (for the banner)
    asked_s: float = 0.0  # a Retry-After refusal: the whole wait the provider asked for
    held_by: str = ""  # ... and who was told it (Refusal.RETRY_AFTER only)


class TransitionKind(enum.StrEnum):
    HOLD = "hold"  # the circuit opened or reopened, or a Retry-After arrived
    RELEASE = "release"  # the circuit closed


@dataclass(frozen=True, slots=True)
class Transition:
    """What waiting turns of the target must learn: hold until ``until``, or go now."""

    kind: TransitionKind
    until: float = 0.0
    code: str = ""


ALLOWED = Admission(allowed=True)


def admit(
    health: TargetHealth, *, settings: HealthSettings, now: float, retry: bool
) -> tuple[TargetHealth, Admission]:
    """May a call to the target start now? ``retry``: it is an automatic retry of a turn."""
    health = _roll_minute(health, now=now)
    if not settings.enabled:
        return _admitted(health, retry=retry), ALLOWED
    code = health.last_code
    if now < health.hold_until:
        asked_s = health.hold_until - health.hold_from
        held = Admission(
            False,
            Refusal.RETRY_AFTER,
            health.hold_until,
            code=code,
            asked_s=asked_s,
            held_by=health.hold_by,
        )
        return health, held
    if health.state is CircuitState.OPEN and now < health.open_until:
        return health, Admission(False, Refusal.CIRCUIT_OPEN, health.open_until, code=code)
    if health.state is CircuitState.HALF_OPEN and now < health.probe_until:
        return health, Admission(False, Refusal.PROBE_IN_FLIGHT, health.probe_until, code=code)
    if health.state is not CircuitState.CLOSED:
        # Open long enough (or the last probe was lost): this call is the one probe.
        probing = replace(
            health, state=CircuitState.HALF_OPEN, probe_until=now + settings.probe_timeout_s
        )
        return _admitted(probing, retry=retry), Admission(True, probe=True, code=code)
    # The turns a successful probe released are let through (the probe proved the target healthy,
    # and if it is not, failures_to_open failures open the circuit again): throttling them would
    # hold recovered turns past their deadline for no provider's sake.
    releasing = now - health.recovered_at < settings.window_s
    if retry and not releasing and not _budget_allows_retry(health, settings=settings, now=now):
        next_minute = (health.minute + 1) * MINUTE_S
        return health, Admission(False, Refusal.RETRY_BUDGET, next_minute, code=code)
    return _admitted(health, retry=retry), ALLOWED


def record_failure(
    health: TargetHealth,
    *,
    settings: HealthSettings,
    now: float,
    code: str,
    retry_after_s: float = 0.0,
    by: str = "",
) -> tuple[TargetHealth, Transition | None]:
    """A call to the target failed with a classified transient ``code`` (made by ``by``)."""
    if not settings.enabled:
        return health, None
    transition = None
    if retry_after_s > 0:
        until = now + min(retry_after_s, HOLD_LIMIT_S)
        if until > health.hold_until:
            health = replace(health, hold_until=until, hold_from=now, hold_by=by)
            transition = Transition(TransitionKind.HOLD, until, code)
    if code not in CIRCUIT_CODES:
        return health, transition
    health = replace(health, last_code=code)
    if health.state is CircuitState.HALF_OPEN:
        reopened = health.reopened + 1
        cool_down = min(settings.open_s * 2**reopened, settings.open_max_s)
        until = max(now + cool_down, health.hold_until)
        health = replace(
            health, state=CircuitState.OPEN, open_until=until, reopened=reopened, probe_until=0.0
        )
        return health, Transition(TransitionKind.HOLD, until, code)
    if health.state is CircuitState.OPEN:
        return health, transition  # a call admitted before it opened; it is open already
    if now - health.window_started_at > settings.window_s:
        health = replace(health, window_started_at=now, failures=0)
    health = replace(health, failures=health.failures + 1)
    if health.failures >= settings.failures_to_open:
        until = max(now + settings.open_s, health.hold_until)
        health = replace(health, state=CircuitState.OPEN, open_until=until, reopened=0)
        return health, Transition(TransitionKind.HOLD, until, code)
    return health, transition


def record_success(
    health: TargetHealth, *, settings: HealthSettings, now: float
) -> tuple[TargetHealth, Transition | None]:
    """A call to the target was answered: whatever was wrong is over for everyone."""
    if not settings.enabled:
        return health, None
    was_unhealthy = health.state is not CircuitState.CLOSED or health.hold_until > now
    health = replace(
        health,
        state=CircuitState.CLOSED,
        failures=0,
        window_started_at=now,
        open_until=0.0,
        reopened=0,
        probe_until=0.0,
        hold_until=0.0,
        hold_by="",
    )
    if not was_unhealthy:
        return health, None
    released = Transition(TransitionKind.RELEASE, now, health.last_code)
    return replace(health, recovered_at=now), released


def _admitted(health: TargetHealth, *, retry: bool) -> TargetHealth:
    return replace(
        health, requests=health.requests + 1, retries=health.retries + (1 if retry else 0)
    )


def _roll_minute(health: TargetHealth, *, now: float) -> TargetHealth:
    minute = int(now // MINUTE_S)
    if minute == health.minute:
        return health
    if minute == health.minute + 1:
        return replace(
            health,
            minute=minute,
            prev_requests=health.requests,
            prev_retries=health.retries,
            requests=0,
            retries=0,
        )
    return replace(health, minute=minute, prev_requests=0, prev_retries=0, requests=0, retries=0)


def _budget_allows_retry(health: TargetHealth, *, settings: HealthSettings, now: float) -> bool:
    # A sliding minute: the previous minute weighs by how much of it the window still covers.
    weight = 1.0 - (now - health.minute * MINUTE_S) / MINUTE_S
    requests = health.requests + health.prev_requests * weight
    retries = health.retries + health.prev_retries * weight
    # This retry is one of the requests too: r retries of n requests keep r <= ratio * n.
    allowed = max(float(settings.retry_floor_per_min), settings.retry_ratio * (requests + 1))
    return retries + 1 <= allowed
