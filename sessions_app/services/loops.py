"""Retry loops: the one retry owner of a prompt generation, held in the database.

This module creates, schedules, postpones and claims RetryLoop rows and writes attempt records.
Ending a loop, showing and retiring its banner and the generation's own state belong to the
lifecycle (``sessions_app.services.lifecycle``); the walk from a failure to a scheduled attempt
is ``sessions_app.services.ladder``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from recovery.budget import Budget
from recovery.policy import Decision
from recovery.telemetry import AttemptRecord as CallRecord
from recovery.telemetry import emit_attempt
from sessions_app.enqueue import attempt_enqueue
from sessions_app.ladder.models import AttemptRecord, RetryLoop
from sessions_app.models import PromptGeneration
from sessions_app.services.lifecycle.retry_wait import RetryBanner
from sessions_app.services.notices import notice_postpone

State = RetryLoop.State
# A scheduled attempt this much past its time is presumed lost with its worker and re-enqueued.
SWEEP_GRACE_S = 5.0


def loop_locked(*, generation: PromptGeneration) -> RetryLoop | None:
    """The generation's loop, locked for this transaction; None before its first retry."""
    return RetryLoop.objects.select_for_update(no_key=True).filter(generation=generation).first()


def turn_budget(*, loop: RetryLoop | None, target_name: str, turn_started_at: float) -> Budget:
    """What the turn has spent: the loop's budget, or (before any retry) a fresh one in which the
    failed call was its own first attempt and the turn cap counts from when the turn started (the
    call's deadline starts when the judge records the failure)."""
    if loop is not None:
        return Budget.from_dict(loop.budget)
    budget = Budget(
        settings=settings.KANDEV_RETRY, started_at=turn_started_at, visited_targets=(target_name,)
    )
    return budget.record_attempt(target=target_name)


def loop_create(*, generation: PromptGeneration, budget: Budget, target_name: str) -> RetryLoop:
    """A retry loop for a generation's first scheduled retry (one per generation)."""
    return RetryLoop.objects.create(
        generation=generation,
        session_id=generation.session_id,
        attempt=0,
        max_attempts=budget.settings.max_attempts,
        budget=budget.to_dict(),
        target_name=target_name,
    )


def loop_schedule(
    *,
    loop: RetryLoop,
    decision: Decision,
    budget: Budget,
    provider: str,
    model: str,
    previous_target: str,
    reason: str = "",
) -> RetryBanner:
    """Persist a decision to retry: the loop waits and the attempt is enqueued for
    ``decision.retry_at`` once this transaction commits. Returns what the banner says, shown
    when the generation starts waiting; ``reason`` replaces the code's own reason on it (a
    target's trouble shared by everyone)."""
    next_target = decision.target or previous_target
    assert decision.retry_at is not None  # only a manual decision has no time, and it is not one
    loop.state = State.WAITING
    # The claim's sequence number only grows, even when a later model call of the turn starts its
    # own ladder at "attempt 1" again: a stale task of an earlier call can never claim this one.
    loop.attempt = max(loop.attempt + 1, decision.attempt)
    loop.max_attempts = decision.max_attempts
    loop.budget = budget.record_wait(decision.wait_s).to_dict()
    loop.target_name = next_target
    loop.next_attempt_at = datetime.fromtimestamp(decision.retry_at, tz=UTC)
    loop.last_code = str(decision.classification.code)
    loop.save()
    loop_id, attempt, eta = loop.pk, loop.attempt, loop.next_attempt_at
    transaction.on_commit(lambda: attempt_enqueue(loop_id=loop_id, attempt=attempt, eta=eta))
    return RetryBanner(
        code=str(decision.classification.code),
        reason=reason or decision.classification.reason,
        provider=provider,
        model=model,
        attempt=decision.attempt,
        max_attempts=decision.max_attempts,
        retry_at=decision.retry_at,
        switched_target=next_target if next_target != previous_target else "",
    )


def loop_postpone(*, loop_id: int, until: float, reason: str) -> RetryLoop | None:
    """Move a waiting loop's next attempt to ``until`` (epoch seconds), banner included, and
    enqueue it for then. None when the loop no longer waits."""
    with transaction.atomic():
        waiting = RetryLoop.objects.filter(pk=loop_id, state=State.WAITING)
        loop = waiting.select_for_update(no_key=True).first()
        if loop is None:
            return None
        loop.next_attempt_at = datetime.fromtimestamp(until, tz=UTC)
        loop.save(update_fields=["next_attempt_at", "updated_at"])
        notice_postpone(loop=loop, retry_at=until, reason=reason)
        attempt, eta = loop.attempt, loop.next_attempt_at
        transaction.on_commit(lambda: attempt_enqueue(loop_id=loop_id, attempt=attempt, eta=eta))
    return loop


def loops_waiting_on(*, target_name: str, before: float) -> list[int]:
    """Ids of loops waiting to call ``target_name`` earlier than ``before`` (epoch seconds)."""
    return list(
        RetryLoop.objects.filter(
            state=State.WAITING,
            target_name=target_name,
            next_attempt_at__lt=datetime.fromtimestamp(before, tz=UTC),
        ).values_list("pk", flat=True)
    )


def loop_claim(*, loop_id: int, attempt: int) -> RetryLoop | None:
    """Claim a scheduled attempt. None when it already ran, or the loop was cancelled or ended."""
    claimed = RetryLoop.objects.filter(pk=loop_id, state=State.WAITING, attempt=attempt).update(
        state=State.RUNNING, next_attempt_at=None, updated_at=timezone.now()
    )
    if claimed != 1:
        return None
    loop = RetryLoop.objects.select_related("generation", "generation__session").get(pk=loop_id)
    loop.budget = Budget.from_dict(loop.budget).record_attempt(target=loop.target_name).to_dict()
    loop.save(update_fields=["budget"])
    return loop


def loop_call_succeeded(*, generation: PromptGeneration) -> None:
    """A model call of a retried turn reached its terminal event: the turn's next call gets a
    ladder of its own (attempts and deadline), the turn cap keeps counting."""
    with transaction.atomic():
        loop = (
            RetryLoop.objects.select_for_update(no_key=True)
            .filter(generation=generation, state=State.RUNNING)
            .first()
        )
        if loop is None:
            return
        loop.budget = Budget.from_dict(loop.budget).record_call_success().to_dict()
        loop.save(update_fields=["budget", "updated_at"])


def loops_overdue(*, now: datetime, grace_s: float = SWEEP_GRACE_S) -> list[RetryLoop]:
    return list(
        RetryLoop.objects.filter(
            state=State.WAITING, next_attempt_at__lte=now - timedelta(seconds=grace_s)
        )
    )


def attempt_number_next(*, generation: PromptGeneration) -> int:
    """The 1-based number of the generation's next provider call record."""
    return AttemptRecord.objects.filter(generation=generation).count() + 1


def attempt_record_write(*, generation: PromptGeneration, record: CallRecord) -> None:
    """One record per provider call, success or failure: a structured log line and an admin row
    from the same values. No free text is recorded, so nothing here can carry a secret."""
    emit_attempt(record)
    AttemptRecord.objects.create(
        session_id=generation.session_id,
        generation=generation,
        attempt=record.attempt,
        target=record.target,
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
