"""The visible retry ladder: what happens to a prompt generation after a provider call failed.

One RetryLoop per generation owns every retry of that turn (one budget, so layers never multiply
attempts). The failure is judged once (``recovery.judge``); a decision to retry is persisted
(loop, notice, generation waiting) and becomes a Celery task scheduled for ``retry_at``, and the
worker that saw the failure returns at once. Each scheduled attempt claims the loop with a
conditional UPDATE, so a redelivered or swept task runs an attempt at most once. Stop, cancel, a
new prompt, start fresh or a target change end the loop; every end retires the session's notices.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence

from django.db import transaction
from django.utils import timezone

from recovery.clock import Clock
from recovery.judge import CallStats, Judgement, call_record, judge
from recovery.policy import Action, Decision
from recovery.replay import ReplayFacts
from recovery.taxonomy import Evidence
from sessions_app.enqueue import attempt_enqueue
from sessions_app.ladder.models import RetryLoop, RetryNotice
from sessions_app.models import PromptGeneration
from sessions_app.services.generations import generation_await_retry, generation_retry_claim
from sessions_app.services.loops import (
    attempt_number_next,
    attempt_record_write,
    loop_call_succeeded,
    loop_claim,
    loop_create,
    loop_end,
    loop_locked,
    loop_schedule,
    loops_overdue,
    turn_budget,
)
from sessions_app.services.notices import notices_cleanup, notices_retire

logger = logging.getLogger(__name__)

State = RetryLoop.State


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
                loop_end(loop=loop, state=_manual_end_state(decision))
        else:
            loop = loop or loop_create(
                generation=generation, budget=judgement.budget, target_name=target_name
            )
            loop_schedule(
                loop=loop,
                decision=decision,
                budget=judgement.budget,
                provider=provider,
                model=model,
                previous_target=target_name,
            )
            generation_await_retry(generation=generation)
    return judgement


def call_succeeded(
    *, generation: PromptGeneration, target_name: str, stats: CallStats | None = None
) -> None:
    """Record a provider call that reached its terminal event; the turn's next call, if any,
    starts a ladder of its own."""
    record = call_record(
        attempt=attempt_number_next(generation=generation), target=target_name, stats=stats
    )
    attempt_record_write(generation=generation, record=record)
    loop_call_succeeded(generation=generation)


def attempt_claim(*, loop_id: int, attempt: int) -> RetryLoop | None:
    """Claim a scheduled attempt and set its generation running again. None when the attempt
    already ran, or the loop was cancelled or ended meanwhile."""
    with transaction.atomic():
        loop = loop_claim(loop_id=loop_id, attempt=attempt)
        if loop is None:
            return None
        generation_retry_claim(generation=loop.generation)
    return loop


def attempt_committed(*, generation_id: int) -> None:
    """The retried call reached the viewer: the provider recovered, so the banner goes now."""
    loop = RetryLoop.objects.filter(generation_id=generation_id, state=State.RUNNING).first()
    if loop is not None:
        notices_retire(
            session_id=loop.session_id, reason=RetryNotice.Retired.RECOVERED, by=loop
        )


def ladder_sweep() -> int:
    """Re-enqueue waiting attempts whose scheduled task was lost with its worker, and finish any
    notice retirement that failed earlier. Safe to run anywhere, any number of times."""
    overdue = loops_overdue(now=timezone.now())
    for loop in overdue:
        logger.info("re-enqueueing overdue attempt %s of loop %s", loop.attempt, loop.pk)
        attempt_enqueue(loop_id=loop.pk, attempt=loop.attempt, eta=None)
    notices_cleanup()
    return len(overdue)


def _manual_end_state(decision: Decision) -> str:
    # A transient failure handed back means the budget ran out; anything else simply failed.
    return State.EXHAUSTED if decision.classification.is_transient else State.FAILED
