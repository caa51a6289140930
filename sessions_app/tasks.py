"""Celery tasks: thin. Load by id, call a service or the agent loop, nothing else.

acks_late, prefetch 1, JSON serialisation and time limits are global (settings.CELERY_*).
"""

from __future__ import annotations

from celery import shared_task


@shared_task(name="sessions_app.run_generation")
def run_generation(generation_id: int) -> None:
    from sessions_app.agent.runner import generation_run

    generation_run(generation_id=generation_id)


@shared_task(name="sessions_app.requeue_stale_generations")
def requeue_stale_generations() -> int:
    """Periodic (Celery beat): re-enqueue generations whose run task never arrived."""
    from sessions_app.services import generations_requeue_stale

    return len(generations_requeue_stale())


@shared_task(name="sessions_app.reap_lost_generations")
def reap_lost_generations() -> int:
    """Periodic (Celery beat): hand back running generations whose worker went silent."""
    from django.conf import settings

    from sessions_app.services import generations_reap_lost

    return len(generations_reap_lost(silent_for_s=settings.KANDEV_WORKER_SILENCE_S))
