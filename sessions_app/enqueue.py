"""Putting work on the broker, by task name.

Services enqueue through here instead of importing the task modules: the tasks import the agent
runner, which imports the services, so naming the task keeps that a one-way street.
"""

from __future__ import annotations

from datetime import datetime

from celery import current_app

RUN_GENERATION = "sessions_app.run_generation"
RETRY_ATTEMPT = "ladder.retry_attempt"


def generation_enqueue(*, generation_id: int, countdown_s: float | None = None) -> None:
    current_app.send_task(RUN_GENERATION, args=(generation_id,), countdown=countdown_s)


def attempt_enqueue(*, loop_id: int, attempt: int, eta: datetime | None) -> None:
    """Schedule (or re-schedule) one retry attempt. The task id is deterministic, so the same
    attempt enqueued twice (a sweep racing the original) is recognisably the same message."""
    current_app.send_task(
        RETRY_ATTEMPT,
        args=(loop_id, attempt),
        eta=eta,
        task_id=f"kandev-retry-{loop_id}-{attempt}",
    )
