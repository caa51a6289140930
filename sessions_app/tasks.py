"""Celery tasks: thin. Load by id, call a service or the agent turn, nothing else.

acks_late, prefetch 1, JSON serialisation and time limits are global (settings.CELERY_*). Services
enqueue these by name (sessions_app.enqueue), so nothing imports this module but Celery.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import worker_process_shutdown, worker_shutdown
from django.conf import settings

from recovery.providers.acp.process import agent_processes_end_all
from sessions_app import enqueue
from sessions_app.agent.runner import generation_retry, generation_run
from sessions_app.approvals.services import approvals_expire, approvals_orphans_cancel
from sessions_app.effects.pruning import snapshots_prune
from sessions_app.push import push_drain
from sessions_app.services import generations_reap_lost, generations_requeue_stale
from sessions_app.services.lifecycle.queued import queue_positions_announce
from sessions_app.services.sweeps import ladder_sweep


# A turn's task outlives the global limits by the time its agent may wait for people's approvals.
@shared_task(
    name=enqueue.RUN_GENERATION,
    soft_time_limit=settings.KANDEV_TURN_SOFT_TIME_LIMIT,
    time_limit=settings.KANDEV_TURN_TIME_LIMIT,
)
def run_generation(generation_id: int) -> None:
    generation_run(generation_id=generation_id)


@shared_task(
    name=enqueue.RETRY_ATTEMPT,
    soft_time_limit=settings.KANDEV_TURN_SOFT_TIME_LIMIT,
    time_limit=settings.KANDEV_TURN_TIME_LIMIT,
)
def retry_attempt(loop_id: int, attempt: int) -> None:
    generation_retry(loop_id=loop_id, attempt=attempt)


@shared_task(name="ladder.sweep")
def sweep() -> int:
    """Periodic (Celery beat): re-enqueue lost retry attempts, retire stale notices."""
    return ladder_sweep()


@shared_task(name="approvals.sweep")
def approvals_sweep() -> int:
    """Periodic (Celery beat): reject every approval nobody answered by its deadline, cancel
    those whose turn is no longer held by a worker."""
    return len(approvals_expire()) + len(approvals_orphans_cancel())


@shared_task(name="effects.prune_snapshots")
def prune_snapshots() -> int:
    """Periodic (Celery beat): drop snapshots no Start fresh can use, and their git objects."""
    return snapshots_prune().snapshots


@shared_task(name="sessions_app.requeue_stale_generations")
def requeue_stale_generations() -> int:
    """Periodic (Celery beat): re-enqueue generations whose run task never arrived."""
    return len(generations_requeue_stale())


@shared_task(name="sessions_app.reap_lost_generations")
def reap_lost_generations() -> int:
    """Periodic (Celery beat): hand back running generations whose worker went silent."""
    return len(generations_reap_lost(silent_for_s=settings.KANDEV_WORKER_SILENCE_S))


@shared_task(name="sessions_app.announce_queue_positions")
def announce_queue_positions() -> int:
    """Periodic (Celery beat): tell queued sessions that their place in line moved."""
    return queue_positions_announce()


logger = logging.getLogger(__name__)


@worker_shutdown.connect
@worker_process_shutdown.connect
def end_agent_processes(**kwargs: Any) -> None:
    """A worker (or one of its pool processes) going away takes its agent processes with it."""
    if ended := agent_processes_end_all():
        logger.warning("worker shutdown: ended %s agent process tree(s)", ended)


@worker_shutdown.connect
def send_last_pushes(**kwargs: Any) -> None:
    """Pushes go out on the push loop after their caller moved on: let the last ones go before
    the process ends (viewers would catch up from the log anyway, a little later)."""
    if not push_drain():
        logger.warning("worker shutdown: some pushes were still going out")
