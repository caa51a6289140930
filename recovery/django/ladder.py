"""The visible retry ladder: what happens to a prompt generation after a provider call failed.

One RetryLoop per generation owns every retry of that turn (one budget, so layers never multiply
attempts). A decision to retry is persisted (state, attempt, next_attempt_at, budget) and becomes a
Celery task with a deterministic id scheduled for ``retry_at``; the worker that saw the failure
returns at once. Each scheduled attempt claims the loop with a conditional UPDATE, so a
redelivered or swept task runs an attempt at most once. Stop, cancel, a new prompt, start fresh or
a target change end the loop; every end retires the session's notices.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import transaction
from django.utils import timezone

from recovery import telemetry
from recovery.budget import Budget, RetrySettings
from recovery.classify import classify
from recovery.clock import Clock
from recovery.django.models import AttemptRecord, RetryLoop
from recovery.django.notices import notice_upsert, notices_retire
from recovery.policy import Action, Decision, decide
from recovery.taxonomy import Classification, ProviderFailure
from sessions_app.models import PromptGeneration, Session

logger = logging.getLogger(__name__)

State = RetryLoop.State
# A scheduled attempt this much past its time is presumed lost with its worker and re-enqueued.
SWEEP_GRACE_S = 5.0


@dataclass(frozen=True, slots=True)
class FailureHandled:
    decision: Decision
    loop: RetryLoop


def loop_settings() -> RetrySettings:
    import os

    return RetrySettings.from_env(os.environ)


def loop_for_generation(
    *, generation: PromptGeneration, target_name: str, turn_started_at: float
) -> RetryLoop:
    """The generation's loop, created on its first failure; the failed call was the turn's first
    attempt, and the deadline counts from when the turn started."""
    settings = loop_settings()
    budget = Budget(settings=settings, started_at=turn_started_at, visited_targets=(target_name,))
    loop, _ = RetryLoop.objects.get_or_create(
        generation=generation,
        defaults={
            "session_id": generation.session_id,
            "attempt": 0,
            "max_attempts": settings.max_attempts,
            "budget": budget.record_attempt(target=target_name).to_dict(),
            "target_name": target_name,
        },
    )
    return loop


def failure_handle(
    *,
    generation: PromptGeneration,
    failure: ProviderFailure,
    target_name: str,
    provider: str,
    model: str,
    fallbacks: list[str],
    turn_started_at: float,
    clock: Clock,
    rng: random.Random,
    stats: object | None = None,
) -> FailureHandled:
    """Classify a failed provider call, decide with the turn's budget, and persist the decision.

    On RETRY / FAILOVER / WAIT_FOR_RESET the loop waits (notice shown, attempt scheduled on
    commit); on MANUAL the loop ends and the caller ends the generation with ``decision.message``.
    """
    classification = classify(failure.evidence)
    with transaction.atomic():
        loop = loop_for_generation(
            generation=generation, target_name=target_name, turn_started_at=turn_started_at
        )
        loop = RetryLoop.objects.select_for_update().get(pk=loop.pk)
        budget = Budget.from_dict(loop.budget)
        decision = decide(
            evidence=failure.evidence,
            classification=classification,
            budget=budget,
            current_target=target_name,
            fallbacks=fallbacks,
            clock=clock,
            rng=rng,
        )
        attempt_log(
            generation=generation,
            target_name=target_name,
            stats=stats,
            evidence=failure.evidence,
            classification=classification,
            decision=decision,
        )
        if decision.action is Action.MANUAL:
            _loop_end(loop=loop, state=_manual_end_state(decision))
        else:
            _loop_schedule(
                loop=loop, generation=generation, decision=decision, budget=budget,
                provider=provider, model=model, previous_target=target_name,
            )
    return FailureHandled(decision=decision, loop=loop)


def attempt_claim(*, loop_id: int, attempt: int) -> RetryLoop | None:
    """Claim a scheduled attempt. None when it already ran, or the loop was cancelled or ended."""
    with transaction.atomic():
        claimed = RetryLoop.objects.filter(pk=loop_id, state=State.WAITING, attempt=attempt).update(
            state=State.RUNNING, next_attempt_at=None, updated_at=timezone.now()
        )
        if claimed != 1:
            return None
        loop = RetryLoop.objects.select_related("generation", "generation__session").get(pk=loop_id)
        loop.budget = Budget.from_dict(loop.budget).record_attempt(target=loop.target_name).to_dict()
        loop.save(update_fields=["budget"])
        PromptGeneration.objects.filter(
            pk=loop.generation_id, state=PromptGeneration.State.WAITING_RETRY
        ).update(state=PromptGeneration.State.RUNNING, heartbeat_at=timezone.now())
        _session_state(loop.session_id, Session.State.RUNNING)
    return loop


def attempt_committed(*, generation_id: int) -> None:
    """The retried call reached the viewer: the provider recovered, so the banner goes now."""
    loop = RetryLoop.objects.filter(generation_id=generation_id, state=State.RUNNING).first()
    if loop is not None:
        notices_retire(session_id=loop.session_id)


def loop_finish(*, generation_id: int, state: str) -> None:
    """The generation ended (success, stop, failure): end a live loop and retire notices."""
    with transaction.atomic():
        loop = (
            RetryLoop.objects.select_for_update()
            .filter(generation_id=generation_id, state__in=RetryLoop.LIVE_STATES)
            .first()
        )
        if loop is not None:
            _loop_end(loop=loop, state=state)


def loops_disarm(*, session_id: int, state: str = State.DISARMED) -> list[RetryLoop]:
    """End every live loop of the session (new prompt, start fresh, target change, cancel).
    Notices are retired even when no loop was live, so a stale banner never survives."""
    with transaction.atomic():
        loops = list(
            RetryLoop.objects.select_for_update().filter(
                session_id=session_id, state__in=RetryLoop.LIVE_STATES
            )
        )
        for loop in loops:
            _loop_end(loop=loop, state=state)
        notices_retire(session_id=session_id)
    return loops


def loops_overdue(*, now: datetime, grace_s: float = SWEEP_GRACE_S) -> list[RetryLoop]:
    return list(
        RetryLoop.objects.filter(
            state=State.WAITING, next_attempt_at__lte=now - timedelta(seconds=grace_s)
        )
    )


def _loop_schedule(
    *,
    loop: RetryLoop,
    generation: PromptGeneration,
    decision: Decision,
    budget: Budget,
    provider: str,
    model: str,
    previous_target: str,
) -> None:
    from recovery.django.tasks import attempt_enqueue

    next_target = decision.target or previous_target
    loop.state = State.WAITING
    loop.attempt = decision.attempt
    loop.max_attempts = decision.max_attempts
    loop.budget = budget.record_wait(decision.wait_s).to_dict()
    loop.target_name = next_target
    loop.next_attempt_at = datetime.fromtimestamp(decision.retry_at, tz=UTC)
    loop.last_code = str(decision.classification.code)
    loop.save()
    PromptGeneration.objects.filter(
        pk=generation.pk, state=PromptGeneration.State.RUNNING
    ).update(state=PromptGeneration.State.WAITING_RETRY)
    _session_state(loop.session_id, Session.State.WAITING_RETRY)
    notice_upsert(
        loop=loop,
        code=str(decision.classification.code),
        reason=decision.classification.reason,
        provider=provider,
        model=model,
        attempt=decision.attempt,
        max_attempts=decision.max_attempts,
        retry_at=decision.retry_at,
        switched_target=next_target if next_target != previous_target else "",
    )
    loop_id, attempt, eta = loop.pk, loop.attempt, loop.next_attempt_at
    transaction.on_commit(lambda: attempt_enqueue(loop_id=loop_id, attempt=attempt, eta=eta))


def _loop_end(*, loop: RetryLoop, state: str) -> None:
    RetryLoop.objects.filter(pk=loop.pk).update(
        state=state, next_attempt_at=None, ended_at=timezone.now(), updated_at=timezone.now()
    )
    loop.state = state
    notices_retire(session_id=loop.session_id)


def _manual_end_state(decision: Decision) -> str:
    # A transient failure handed back means the budget ran out; anything else simply failed.
    return State.EXHAUSTED if decision.classification.is_transient else State.FAILED


def _session_state(session_id: int, state: str) -> None:
    from sessions_app.services import session_state_set

    session = Session.objects.get(pk=session_id)
    session_state_set(session=session, state=state)


def attempt_log(
    *,
    generation: PromptGeneration,
    target_name: str,
    stats: object | None = None,
    evidence: object | None = None,
    classification: Classification | None = None,
    decision: Decision | None = None,
) -> None:
    """One record per provider call, success or failure: a structured log line and an admin row
    from the same values. ``stats`` is the call's guarded stream (ttft, bytes, usage) when known.
    No free text is recorded, so nothing here can carry a secret."""
    usage = getattr(stats, "usage", None)
    record = telemetry.attempt_record_build(
        attempt=AttemptRecord.objects.filter(generation=generation).count() + 1,
        target=target_name,
        evidence=evidence,
        classification=classification,
        decision=decision,
        ttft_ms=getattr(stats, "ttft_ms", None),
        bytes_received=getattr(stats, "bytes_received", 0) or 0,
        input_tokens=getattr(usage, "input_tokens", None),
        output_tokens=getattr(usage, "output_tokens", None),
    )
    telemetry.emit_attempt(record)
    AttemptRecord.objects.create(
        session_id=generation.session_id,
        generation=generation,
        attempt=record.attempt,
        target=target_name,
        phase=record.phase or "",
        kind=record.kind,
        code=record.code,
        rule_id=record.rule_id or "",
        exposure=record.exposure,
        decision=record.decision,
        wait_s=record.wait_s,
        ttft_ms=round(record.ttft_ms) if record.ttft_ms is not None else None,
        bytes_received=record.bytes_received,
        input_tokens=record.input_tokens or 0,
        output_tokens=record.output_tokens or 0,
    )
