"""The ladder's Celery tasks: thin, load by id, call a service."""

from __future__ import annotations

import logging
from datetime import datetime

from celery import shared_task
from django.utils import timezone

logger = logging.getLogger(__name__)


def attempt_enqueue(*, loop_id: int, attempt: int, eta: datetime | None) -> None:
    """Schedule (or re-schedule) one attempt under its deterministic task id."""
    retry_attempt.apply_async(
        args=(loop_id, attempt), eta=eta, task_id=f"kandev-retry-{loop_id}-{attempt}"
    )


@shared_task(name="ladder.retry_attempt")
def retry_attempt(loop_id: int, attempt: int) -> None:
    from sessions_app.agent.runner import generation_retry

    generation_retry(loop_id=loop_id, attempt=attempt)


@shared_task(name="ladder.sweep")
def sweep() -> int:
    """Re-enqueue waiting attempts whose scheduled task was lost with its worker, and finish any
    notice retirement that failed earlier. Safe to run anywhere, any number of times."""
    from recovery.django.ladder import loops_overdue
    from recovery.django.notices import notices_cleanup

    overdue = loops_overdue(now=timezone.now())
    for loop in overdue:
        logger.info("re-enqueueing overdue attempt %s of loop %s", loop.attempt, loop.pk)
        attempt_enqueue(loop_id=loop.pk, attempt=loop.attempt, eta=None)
    notices_cleanup()
    return len(overdue)
