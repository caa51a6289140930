"""Classification + exposure + budget -> one Decision. The only place that decides recovery.

The order of questions is the order of safety:
1. Did anything reach a viewer? Then nothing is replayed: manual.
2. Is the failure known to be temporary? Unclassified: manual. Hard: manual, unless its code is
   fallback-eligible (a withdrawn model) and an unvisited fallback remains: fail over.
3. Are attempts left? If not: manual, saying how many were made.
4. How long must we wait? The jittered ladder delay, raised to the provider's Retry-After
   (a floor); for a rate limit whose reset is further away than that, the reset itself. A
   Retry-After beyond ``retry_after_cap_s`` (other than a rate limit's) is not shortened to the
   cap, since the provider would refuse us again: fail over, or hand back naming the wait.
5. Does that wait fit in the deadline? Yes: retry (or wait for the reset). No: fail over to an
   unvisited fallback at once when the code allows it, else manual, naming the wait.

The provider's ``x-should-retry`` is honoured both ways: ``false`` stops a transient failure
from being retried, ``true`` lets a failure the catalogue does not know be retried on the ladder
(the provider itself says it is temporary). Every provider hint is bounded (PROVIDER_WAIT_LIMIT_S).

WAIT_FOR_RESET is chosen only for ``rate_limited`` when the provider's own reset time is later
than the capped retry wait yet still inside the deadline: retrying before a known reset would be
refused, so we wait exactly until it instead of sleeping on the ladder.
"""

from __future__ import annotations

import enum
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from recovery.budget import Budget
from recovery.clock import Clock
from recovery.shared_health_wording import deferred_message, shared_hold_too_long_message
from recovery.taxonomy import CODE_POLICY, Classification, Code, Confidence, Evidence, Klass
from recovery.wording import (
    exhausted_message,
    failover_message,
    hard_message,
    out_of_time_message,
    post_exposure_message,
    provider_refused_retry_message,
    provider_wait_message,
    retry_message,
    turn_cap_message,
    unclassified_message,
    wait_for_reset_message,
)

# A hint beyond this is not a wait anyone honours: read as this much (failures.HINT_LIMIT_MS too).
PROVIDER_WAIT_LIMIT_S = 30 * 86_400.0


class Action(enum.StrEnum):
    RETRY = "retry"
    FAILOVER = "failover"
    WAIT_FOR_RESET = "wait_for_reset"
    MANUAL = "manual"


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    classification: Classification
    wait_s: float  # 0 for manual and failover
    retry_at: float | None  # epoch seconds when the next attempt may start
    target: str | None  # the target to use next (failover: the new one); None for manual
    attempt: int  # the retry this schedules (1-based); for manual, the retries already made
    max_attempts: int  # retries allowed for the turn (the "m" of "attempt n of m")
    message: str  # honest, plain user-facing sentence

    @property
    def is_automatic(self) -> bool:
        return self.action is not Action.MANUAL


def decide(
    *,
    evidence: Evidence,
    classification: Classification,
    budget: Budget,
    current_target: str,
    fallbacks: Sequence[str],
    clock: Clock,
    rng: random.Random,
) -> Decision:
    settings = budget.settings
    failed_attempt = max(budget.attempts, 1)
    now = clock.now()

    def manual(message: str) -> Decision:
        return manual_decision(classification=classification, budget=budget, message=message)

    code = classification.code
    if evidence.exposure.is_user_visible:
        return manual(post_exposure_message(code))
    unclassified = classification.klass is Klass.UNCLASSIFIED or code is Code.UNCLASSIFIED
    if unclassified and evidence.should_retry is not True:
        return manual(unclassified_message())
    if classification.klass is Klass.TRANSIENT and evidence.should_retry is False:
        return manual(provider_refused_retry_message(code))
    provider_wait_s = _provider_wait_s(evidence, classification, now=now)
    if classification.klass is Klass.HARD:
        # A hard failure that names this target (a withdrawn model) may still succeed elsewhere.
        fallback = _next_fallback(fallbacks, budget.visited_targets)
        can_move = budget.attempts_left > 0 and budget.remaining_s(clock=clock) > 0
        if classification.fallback_eligible and fallback is not None and can_move:
            return _failover(classification, budget, fallback, now=now)
        return manual(hard_message(code, resets_in_s=provider_wait_s or None))
    if budget.attempts_left <= 0:
        return manual(exhausted_message(code, attempts=budget.retries))

    ladder_s = _jittered(settings.delay_after_s(failed_attempt), settings.jitter, rng)
    retry_after_s = min(_seconds(evidence.retry_after_ms), PROVIDER_WAIT_LIMIT_S)
    wait_s = max(ladder_s, min(retry_after_s, settings.retry_after_cap_s))
    action = Action.RETRY
    if code is Code.RATE_LIMITED and provider_wait_s > wait_s:
        action, wait_s = Action.WAIT_FOR_RESET, provider_wait_s

    remaining_s = budget.remaining_s(clock=clock)
    # Retrying before the provider's own Retry-After would be refused again, so a hint past the
    # cap is not shortened to it (a rate limit's reset is waited for within the deadline).
    beyond_cap = action is Action.RETRY and retry_after_s > settings.retry_after_cap_s
    # The provider says it will refuse us for longer than we may wait: waiting less is futile.
    if beyond_cap or wait_s > remaining_s or provider_wait_s > remaining_s:
        fallback = _next_fallback(fallbacks, budget.visited_targets)
        if classification.fallback_eligible and fallback is not None and remaining_s > 0:
            return _failover(classification, budget, fallback, now=now)
        if code in _RESETTING and provider_wait_s > remaining_s:
            return manual(hard_message(code, resets_in_s=provider_wait_s))
        if beyond_cap or provider_wait_s > remaining_s:
            limit_s = settings.retry_after_cap_s if beyond_cap else remaining_s
            return manual(
                provider_wait_message(
                    code,
                    wait_s=max(retry_after_s, provider_wait_s),
                    limit_s=limit_s,
                    limit_is_cap=beyond_cap,
                )
            )
        if budget.turn_cap_binds(clock=clock):
            return manual(turn_cap_message(code, turn_elapsed_s=budget.turn_elapsed_s(clock=clock)))
        return manual(out_of_time_message(code, elapsed_s=budget.elapsed_s(clock=clock)))

    next_attempt = budget.retries + 1
    if action is Action.WAIT_FOR_RESET:
        message = wait_for_reset_message(
            code, wait_s=wait_s, attempt=next_attempt, max_attempts=settings.max_attempts
        )
    else:
        message = retry_message(
            code, wait_s=wait_s, attempt=next_attempt, max_attempts=settings.max_attempts
        )
    return Decision(
        action=action,
        classification=classification,
        wait_s=wait_s,
        retry_at=now + wait_s,
        target=current_target,
        attempt=next_attempt,
        max_attempts=settings.max_attempts,
        message=message,
    )


def manual_decision(*, classification: Classification, budget: Budget, message: str) -> Decision:
    """Stop and hand the turn to a person (Resume / Start fresh), saying ``message``."""
    return Decision(
        action=Action.MANUAL,
        classification=classification,
        wait_s=0.0,
        retry_at=None,
        target=None,
        attempt=budget.retries,
        max_attempts=budget.settings.max_attempts,
        message=message,
    )


def _failover(
    classification: Classification, budget: Budget, target: str, *, now: float
) -> Decision:
    # A different target owes nothing to this one's backoff, so the switch is immediate.
    return Decision(
        action=Action.FAILOVER,
        classification=classification,
        wait_s=0.0,
        retry_at=now,
        target=target,
        attempt=budget.retries + 1,
        max_attempts=budget.settings.max_attempts,
        message=failover_message(classification.code, target=target),
    )


def _jittered(delay_s: float, jitter: float, rng: random.Random) -> float:
    if jitter <= 0 or delay_s <= 0:
        return float(delay_s)
    return delay_s * (1.0 + rng.uniform(-jitter, jitter))


def _seconds(milliseconds: int | None) -> float:
    if milliseconds is None or milliseconds <= 0:
        return 0.0  # Retry-After: 0 means "no floor", never "wait less than the ladder"
    return milliseconds / 1000.0


def _provider_wait_s(evidence: Evidence, classification: Classification, *, now: float) -> float:
    """How long the provider says it will keep refusing us (0 when it did not say)."""
    waits = [
        _seconds(evidence.retry_after_ms),
        _seconds(classification.reset_hint_ms),
    ]
    reset_at_ms = classification.reset_at_ms or evidence.reset_at_ms
    if reset_at_ms:
        waits.append(max(reset_at_ms / 1000.0 - now, 0.0))
    wait = max(waits)
    return min(wait, PROVIDER_WAIT_LIMIT_S) if math.isfinite(wait) else 0.0


# Codes whose provider wait is a limit's reset ("the limit resets in 3 hours").
_RESETTING = frozenset({Code.RATE_LIMITED, Code.QUOTA_LIMITED})


def _next_fallback(fallbacks: Sequence[str], visited: Sequence[str]) -> str | None:
    return next((target for target in fallbacks if target not in visited), None)


@dataclass(frozen=True, slots=True)
class SharedHold:
    """A Retry-After another call of the target was given, holding this turn's call too."""

    asked_s: float  # the whole wait the provider asked for
    ours: bool  # that call was this session's own


def defer_decision(
    *,
    budget: Budget,
    code: Code,
    reason: str,
    retry_at: float,
    current_target: str,
    clock: Clock,
    failed_before: bool = True,
    hold: SharedHold | None = None,
) -> Decision:
    """The target's shared health holds a call back until ``retry_at`` (circuit, Retry-After or
    the target's retry budget). No call was made, so no attempt is spent; the turn waits, unless
    the wait would outlast the call's deadline or the turn's cap, and then it is handed back like
    any turn that ran out of time. A hold is the call's trouble as much as a failure is: the
    call's deadline starts at its first hold or failure, whichever came first (the caller
    persists ``budget.record_failure``).

    A shared Retry-After (``hold``) is judged as the turn that was given it was: a wait past
    ``retry_after_cap_s`` (other than a rate limit's reset, which is waited for within the
    deadline) hands the turn back naming it, rather than wait longer than that turn was allowed
    to. ``failed_before`` False: the turn has made no failing call of its own, so its banner
    counts no attempt (``Decision.attempt`` 0)."""
    now = clock.now()
    wait_s = max(retry_at - now, 0.0)
    classification = classification_of(code)
    budget = budget.record_failure(clock=clock)
    cap_s = budget.settings.retry_after_cap_s
    if hold is not None and code is not Code.RATE_LIMITED and wait_s > cap_s:
        return manual_decision(
            classification=classification,
            budget=budget,
            message=shared_hold_too_long_message(asked_s=hold.asked_s, cap_s=cap_s, ours=hold.ours),
        )
    if wait_s > budget.remaining_s(clock=clock):
        return manual_decision(
            classification=classification,
            budget=budget,
            message=out_of_time_message(code, elapsed_s=budget.elapsed_s(clock=clock)),
        )
    attempt = budget.retries + 1 if failed_before else 0
    return Decision(
        action=Action.RETRY,
        classification=classification,
        wait_s=wait_s,
        retry_at=now + wait_s,
        target=current_target,
        attempt=attempt,
        max_attempts=budget.settings.max_attempts,
        message=deferred_message(
            reason, wait_s=wait_s, attempt=attempt, max_attempts=budget.settings.max_attempts
        ),
    )


def classification_of(code: Code) -> Classification:
    """The classification a code stands for when no evidence of its own was judged."""
    policy = CODE_POLICY[code]
    return Classification(
        code=code,
        klass=policy.klass,
        confidence=Confidence.HIGH,
        rule_id=None,
        catalogue_version="",
        fallback_eligible=policy.fallback_eligible,
    )
