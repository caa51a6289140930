"""Work lost with its worker or its broker message, found and handed on again.

Each sweep is safe to run anywhere, any number of times: the lifecycle's conditional moves and
the attempt claim let exactly one run through. A worker proves it is alive with
``generation_heartbeat``; a running generation silent for too long is reaped.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone

from recovery import wording
from sessions_app.enqueue import attempt_enqueue, generation_enqueue
from sessions_app.models import Message, PromptGeneration
from sessions_app.services.lifecycle.generation import generation_end
from sessions_app.services.lifecycle.retry_wait import notices_cleanup
from sessions_app.services.loops import loops_overdue
from sessions_app.services.messages import message_finish

logger = logging.getLogger(__name__)
State = PromptGeneration.State


def generation_heartbeat(*, generation_ids: Iterable[int]) -> None:
    """The worker running these generations is alive (one UPDATE for all of them)."""
    # A turn waiting for a person's approval is still held (and heartbeated) by its worker.
    PromptGeneration.objects.filter(
        pk__in=list(generation_ids), state__in=PromptGeneration.WORKER_STATES
    ).update(heartbeat_at=timezone.now())


def generations_reap_lost(*, silent_for_s: float) -> list[int]:
    """End every running generation whose worker has been silent for ``silent_for_s`` (killed
    mid-run: acks_late redelivers its task, but the claim rightly refuses a second run). Partial
    output is closed as incomplete and the session offers Resume and Start fresh. Returns ids."""
    cutoff = timezone.now() - dt.timedelta(seconds=silent_for_s)
    lost = PromptGeneration.objects.select_related("session").filter(
        state__in=PromptGeneration.WORKER_STATES, heartbeat_at__lt=cutoff
    )
    reaped = []
    for generation in lost:
        with transaction.atomic():
            for message in Message.objects.filter(
                generation=generation, status=Message.Status.STREAMING
            ).select_related("session"):
                message_finish(message=message, status=Message.Status.ERROR, incomplete=True)
            if generation_end(
                generation=generation,
                state=State.FAILED,
                error_code="worker_lost",
                error_message=wording.WORKER_LOST,
            ):
                reaped.append(generation.pk)
    return reaped


def generations_requeue_stale(*, older_than_s: float = 30.0) -> list[int]:
    """Enqueue again every generation still queued after ``older_than_s`` (its task was lost to a
    broker hiccup, or its enqueue never happened). Duplicates are harmless: the claim lets one
    delivery through. Returns the ids re-enqueued."""
    cutoff = timezone.now() - dt.timedelta(seconds=older_than_s)
    stale = list(
        PromptGeneration.objects.filter(state=State.QUEUED, created_at__lt=cutoff)
        # One waiting for an agent slot schedules its own next try; another would double it.
        .exclude(queue_reason=PromptGeneration.QueueReason.AGENT_SLOT)
        .values_list("pk", flat=True)
    )
    for generation_id in stale:
        generation_enqueue(generation_id=generation_id)
    return stale


def ladder_sweep() -> int:
    """Re-enqueue waiting attempts whose scheduled task was lost with its worker, and finish any
    notice retirement that failed earlier. Returns how many attempts were re-enqueued."""
    overdue = loops_overdue(now=timezone.now())
    for loop in overdue:
        logger.info("re-enqueueing overdue attempt %s of loop %s", loop.attempt, loop.pk)
        attempt_enqueue(loop_id=loop.pk, attempt=loop.attempt, eta=None)
    notices_cleanup()
    return len(overdue)
