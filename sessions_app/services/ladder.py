"""The visible retry ladder: what happens to a prompt generation after a provider call failed.

One RetryLoop per generation owns every retry of that turn (one budget, so layers never multiply
attempts). The failure is judged once (``recovery.judge``); a decision to retry is persisted
(loop, notice, generation waiting) and becomes a Celery task scheduled for ``retry_at``, and the
worker that saw the failure returns at once. Each scheduled attempt claims the loop with a
conditional UPDATE, so a redelivered or swept task runs an attempt at most once. The loop's end,
the banner and the generation's state are the lifecycle's (``services/lifecycle``): this module
asks for them and never writes them itself.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence

from django.conf import settings
from django.db import transaction

from recovery.budget import Budget
from recovery.circuit import Admission, Refusal, Transition, TransitionKind
from recovery.clock import Clock
from recovery.judge import CallStats, Judgement, call_record, judge
from recovery.policy import Action, Decision, SharedHold, defer_decision
from recovery.replay import ReplayFacts
from recovery.shared_health_wording import (
    RETRIES_SPACED_OUT,
    shared_hold_reason,
    shared_trouble_reason,
    shared_trouble_wait_reason,
)
from recovery.taxonomy import CODE_POLICY, Code, Evidence
from sessions_app import metrics
from sessions_app.ladder.models import RetryLoop
from sessions_app.models import PromptGeneration
from sessions_app.selectors import calls_failed
from sessions_app.services.lifecycle.generation import (
    generation_await_retry,
    generation_retry_claim,
)
from sessions_app.services.lifecycle.retry_wait import notice_retire_recovered, retry_hand_back
from sessions_app.services.loops import (
    attempt_number_next,
    attempt_record_write,
    loop_call_succeeded,
    loop_claim,
    loop_create,
    loop_locked,
    loop_postpone,
    loop_schedule,
    loops_waiting_on,
    turn_budget,
)
from sessions_app.services.notices import notice_retrying
from sessions_app.services.target_health import health_failure, health_success, held_add, held_take

logger = logging.getLogger(__name__)

State = RetryLoop.State
# Turns held back by the target's health ask again spread over this many seconds, so the held
# turns do not all arrive at the same instant; a release spreads its herd the same way.
DEFER_SPREAD_S = 1.0
RELEASE_SPREAD_S = 2.0


def failure_handle(
    *,
    generation: PromptGeneration,
    evidence: Evidence,
    target_name: str,
    provider: str,
    model: str,
    fallbacks: Sequence[str],
    turn_started_at: float,
    clock: Clock,
    rng: random.Random,
    stats: CallStats | None = None,
    replay: ReplayFacts | None = None,
) -> Judgement:
    """Judge a failed provider call with the turn's budget and persist the decision.

    ``replay`` is what a failed whole-prompt attempt (ACP) showed; the judge refuses an automatic
    retry unless it proves the attempt showed nothing. On RETRY / FAILOVER / WAIT_FOR_RESET the
    generation waits (notice shown, attempt scheduled on commit); on MANUAL the loop ends and the
    caller ends the generation with its own card.
    """
    with transaction.atomic():
        loop = loop_locked(generation=generation)
        budget = turn_budget(loop=loop, target_name=target_name, turn_started_at=turn_started_at)
        judgement = judge(
            evidence=evidence,
            budget=budget,
            attempt=attempt_number_next(generation=generation),
            current_target=target_name,
            fallbacks=fallbacks,
            clock=clock,
            rng=rng,
            stats=stats,
            replay=replay,
        )
        attempt_record_write(generation=generation, record=judgement.record)
        decision = judgement.decision
        if decision.action is Action.MANUAL:
            # Handed back. A loop exists only once something was retried; it ends here.
            if loop is not None:
                retry_hand_back(loop=loop, transient=decision.classification.is_transient)
        else:
            loop = loop or loop_create(
                generation=generation, budget=judgement.budget, target_name=target_name
            )
            banner = loop_schedule(
                loop=loop,
                decision=decision,
                budget=judgement.budget,
                provider=provider,
                model=model,
                previous_target=target_name,
            )
            generation_await_retry(generation=generation, loop=loop, banner=banner)
            metrics.count(metrics.RETRIES, outcome="scheduled", target=target_name)
            if decision.action is not Action.FAILOVER:
                # A failover calls another target: it never waits on this one's health.
                held_add(target_name=target_name, loop_id=loop.pk)
    _health_failed(
        target_name=target_name,
        judgement=judgement,
        by=str(generation.session_id),
        clock=clock,
        rng=rng,
    )
    return judgement


def call_succeeded(
    *,
    generation: PromptGeneration,
    target_name: str,
    clock: Clock,
    rng: random.Random,
    stats: CallStats | None = None,
) -> None:
    """Record a provider call that reached its terminal event: for the turn's attempt records,
    and for every turn of the target (a success closes its circuit and releases who waited).
    The turn's next call, if any, starts a ladder of its own."""
    record = call_record(
        attempt=attempt_number_next(generation=generation), target=target_name, stats=stats
    )
    attempt_record_write(generation=generation, record=record)
    loop_call_succeeded(generation=generation)
    transition = health_success(target_name=target_name, now=clock.now())
    if transition is not None:
        health_transition_apply(
            target_name=target_name, transition=transition, now=clock.now(), rng=rng
        )


def attempt_defer(
    *,
    generation: PromptGeneration,
    admission: Admission,
    target_name: str,
    provider: str,
    model: str,
    turn_started_at: float,
    clock: Clock,
    rng: random.Random,
) -> Decision:
    """The target's shared health refused the turn's next call: no call was made, so no attempt
    is spent and nothing is recorded as a provider call. The turn waits (banner saying the
    trouble is everyone's) until ``admission.retry_at``, spread a little so the waiting turns do
    not all ask at once, or is handed back when that is past its deadline, or a shared
    Retry-After is past the cap its own call would have been judged by (MANUAL).

    A turn that has made no failing call of its own is told whose trouble it waits for (another
    session's Retry-After, or the circuit other sessions' failures opened), with no attempt
    count, and its answer is not marked as recovered after retries."""
    code = _code_or_overloaded(admission.code)
    failed_before = calls_failed(generation=generation) > 0
    ours = admission.held_by == str(generation.session_id)
    hold = None
    if admission.refusal is Refusal.RETRY_AFTER:
        hold = SharedHold(asked_s=admission.asked_s, ours=ours)
    if admission.refusal is Refusal.RETRY_BUDGET:
        reason = RETRIES_SPACED_OUT
    elif failed_before:
        reason = shared_trouble_reason(code)
    elif hold is not None:
        reason = shared_hold_reason(asked_s=hold.asked_s, ours=ours)
    else:
        reason = shared_trouble_wait_reason(code)
    with transaction.atomic():
        loop = loop_locked(generation=generation)
        if loop is None:
            budget = Budget(
                settings=settings.KANDEV_RETRY,
                started_at=turn_started_at,
                visited_targets=(target_name,),
            )
        else:
            budget = Budget.from_dict(loop.budget)
            if loop.state == State.RUNNING:
                budget = budget.unrecord_attempt()  # claimed for a call that was never made
        budget = budget.record_failure(clock=clock)  # the call's deadline runs from its first hold
        decision = defer_decision(
            budget=budget,
            code=code,
            reason=reason,
            retry_at=admission.retry_at + rng.uniform(0.0, DEFER_SPREAD_S),
            current_target=target_name,
            clock=clock,
            failed_before=failed_before,
            hold=hold,
        )
        if decision.action is Action.MANUAL:
            if loop is not None:
                retry_hand_back(loop=loop, transient=True)
            return decision
        loop = loop or loop_create(generation=generation, budget=budget, target_name=target_name)
        banner = loop_schedule(
            loop=loop,
            decision=decision,
            budget=budget,
            provider=provider,
            model=model,
            previous_target=target_name,
            reason=reason,
        )
        generation_await_retry(generation=generation, loop=loop, banner=banner)
    held_add(target_name=target_name, loop_id=loop.pk)
    metrics.count(metrics.DEFERRALS, reason=str(admission.refusal or "unknown"), target=target_name)
    return decision


def health_transition_apply(
    *, target_name: str, transition: Transition, now: float, rng: random.Random
) -> int:
    """Tell every turn waiting on the target what its health just learnt. A hold (the circuit
    opened, a probe failed, a Retry-After arrived) moves each earlier attempt to the hold's end,
    banner included; a release (the circuit closed) brings every held attempt forward to now,
    spread over a moment. A hold longer than the longest automatic wait (a Retry-After past the
    cap) brings them forward too: each attempt then meets the hold and is handed back naming it,
    as the turn given that Retry-After was, instead of waiting past the cap. Returns how many
    loops moved."""
    metrics.count(metrics.CIRCUIT_TRANSITIONS, kind=transition.kind, target=target_name)
    code = _code_or_overloaded(transition.code)
    if transition.kind is TransitionKind.HOLD:
        loop_ids = loops_waiting_on(target_name=target_name, before=transition.until)
        reason = shared_trouble_reason(code)
        until = transition.until
        cap_s = settings.KANDEV_RETRY.retry_after_cap_s
        if code is not Code.RATE_LIMITED and until - now > cap_s:
            until = now
    else:
        loop_ids = held_take(target_name=target_name)
        reason = CODE_POLICY[code].reason
        until = transition.until
    moved = 0
    for loop_id in loop_ids:
        spread_s = RELEASE_SPREAD_S if transition.kind is TransitionKind.RELEASE else DEFER_SPREAD_S
        at = until + rng.uniform(0.0, spread_s)
        if loop_postpone(loop_id=loop_id, until=at, reason=reason) is not None:
            moved += 1
            if transition.kind is TransitionKind.HOLD:
                held_add(target_name=target_name, loop_id=loop_id)
    if moved:
        logger.info("target %s: %s for %s waiting turns", target_name, transition.kind, moved)
    return moved


def attempt_claim(*, loop_id: int, attempt: int) -> RetryLoop | None:
    """Claim a scheduled attempt and set its generation running again. None when the attempt
    already ran, or the loop was cancelled or ended meanwhile."""
    with transaction.atomic():
        loop = loop_claim(loop_id=loop_id, attempt=attempt)
        if loop is None:
            return None
        generation_retry_claim(generation=loop.generation)
        notice_retrying(loop=loop)
    return loop


def attempt_committed(*, generation_id: int) -> None:
    """The retried call reached the viewer: the provider recovered, so the banner goes now."""
    notice_retire_recovered(generation_id=generation_id)


def _health_failed(
    *, target_name: str, judgement: Judgement, by: str, clock: Clock, rng: random.Random
) -> None:
    """A judged failure of the target feeds its shared health (transient failures only)."""
    classification = judgement.classification
    if not classification.is_transient:
        return
    code = str(classification.code)
    metrics.count(metrics.TRANSIENT_FAILURES, code=code, target=target_name)
    retry_after_ms = judgement.evidence.retry_after_ms or 0
    transition = health_failure(
        target_name=target_name,
        now=clock.now(),
        code=code,
        retry_after_s=max(retry_after_ms, 0) / 1000.0,
        by=by,
    )
    if transition is not None:
        health_transition_apply(
            target_name=target_name, transition=transition, now=clock.now(), rng=rng
        )


def _code_or_overloaded(code: str) -> Code:
    try:
        return Code(code)
    except ValueError:
        return Code.PROVIDER_OVERLOADED
