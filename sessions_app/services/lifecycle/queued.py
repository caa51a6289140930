"""The queued state: prompts fair between people, each viewer told their place in line.

A generation is queued from the moment it is submitted until a worker claims it, and its session
says so ("Queued · 2 ahead"), distinct from running. It waits for one of three things
(``PromptGeneration.queue_reason``):

- a free worker (``""``): its task is on the broker, behind the tasks sent before it;
- the person's own earlier prompts (``user_limit``): they already have KANDEV_USER_MAX_RUNNING
  generations running. Its task has been taken off the broker (the claim refused it), so one
  person's prompts never stand in front of another person's. When one of theirs stops running,
  their oldest held prompt is enqueued again (``queue_release_next``), at the back of the line:
  between people the line is round-robin, one prompt of each at a time;
- an agent slot on the worker box (``agent_slot``, ACP targets only; sessions_app/agent/slots.py):
  its task comes back after KANDEV_ACP_SLOT_WAIT_S;
- the other session of its task (``workspace``, tasks bound to a project only): the task's
  worktree is one checkout, so one turn at a time touches it. Like ``user_limit`` its task is off
  the broker, and it is enqueued again when the task's running turn stops running
  (``workspace_release_next``), the oldest held one first. One held behind a turn waiting to
  retry is enqueued again by the stale sweep (``generations_requeue_stale``) once that ends.

Its place: the queued generations waiting for the same thing that were created before it (for
``user_limit``, the same person's; for ``workspace``, the same task's). It is announced on the
session's event stream (``session.updated`` carries ``queue``), when the generation is queued,
held or released, and by the beat task ``queue_positions_announce`` as the line moves;
``selectors.session_queue`` and ``selectors.sessions_queue`` give it to the session page and the
board.
"""

from __future__ import annotations

from django.conf import settings
from django.db import connection, transaction

from sessions_app.enqueue import generation_enqueue
from sessions_app.models import PromptGeneration
from sessions_app.selectors import queue_ahead, queue_dict, queue_positions
from sessions_app.services.lifecycle.session_state import session_queue_refresh
from sessions_app.workspaces.selectors import task_workspace

State = PromptGeneration.State
Reason = PromptGeneration.QueueReason
# Positions are announced for this many queued generations per beat at most: the first ones are
# those whose number moves people; "more than N ahead" is what the rest are told by their page.
ANNOUNCE_LIMIT = 500
# A key space of its own for pg_advisory_xact_lock, so a person's claim and release never race.
_USER_LOCK_SPACE = 7_340_001
_TASK_LOCK_SPACE = 7_340_002


def user_lock(*, user_id: int | None) -> None:
    """Serialise the claims and releases of one person's generations (until commit)."""
    if user_id is None:
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_USER_LOCK_SPACE, user_id])


def user_at_limit(*, user_id: int | None) -> bool:
    limit = settings.KANDEV_USER_MAX_RUNNING
    if not limit or user_id is None:
        return False
    running = PromptGeneration.objects.filter(
        requested_by_id=user_id, state__in=PromptGeneration.WORKER_STATES
    ).count()
    return running >= limit


def workspace_busy(*, generation: PromptGeneration) -> bool:
    """Whether another generation of the generation's bound task is running or waiting to retry
    in its worktree. Locks the task (until commit) so two claims never both see it free."""
    task_id = generation.session.task_id
    if task_id is None or task_workspace(task_id=task_id) is None:
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_TASK_LOCK_SPACE, task_id])
    return (
        PromptGeneration.objects.filter(
            session__task_id=task_id, state__in=(State.RUNNING, State.WAITING_RETRY)
        )
        .exclude(pk=generation.pk)
        .exists()
    )


def workspace_release_next(*, task_id: int | None) -> PromptGeneration | None:
    """A turn of the task stopped running: its oldest prompt held for the worktree goes back in
    line (enqueued on commit). The claim checks again, so a release too many is harmless."""
    if task_id is None:
        return None
    with transaction.atomic():
        held = (
            PromptGeneration.objects.select_related("session")
            .filter(session__task_id=task_id, state=State.QUEUED, queue_reason=Reason.WORKSPACE)
            .order_by("created_at", "id")
            .first()
        )
        if held is None:
            return None
        queue_hold(generation=held, reason=Reason.WORKER)
        generation_id = held.pk
        transaction.on_commit(lambda: generation_enqueue(generation_id=generation_id), robust=True)
    return held


def queue_announce(*, generation: PromptGeneration, moved_only: bool = True) -> None:
    """Tell the session's viewers the generation's place in line (by default only when it
    changed)."""
    ahead = queue_ahead(generation=generation)
    if moved_only and ahead == generation.queue_ahead:
        return
    session_queue_refresh(generation=generation, ahead=ahead, queue=queue_dict(generation, ahead))


def queue_hold(*, generation: PromptGeneration, reason: str) -> bool:
    """The generation stays queued, waiting for ``reason``; its viewers are told. False when it
    is no longer queued (stopped meanwhile)."""
    with transaction.atomic():
        if not PromptGeneration.objects.filter(pk=generation.pk, state=State.QUEUED).update(
            queue_reason=reason
        ):
            return False
        changed = generation.queue_reason != reason
        generation.queue_reason = reason
        queue_announce(generation=generation, moved_only=not changed)
    return True


def queue_release_next(*, user_id: int | None) -> PromptGeneration | None:
    """One of the person's generations stopped running: their oldest held prompt goes back in
    line (enqueued on commit). The claim checks the limit again, so releasing one too many is
    harmless."""
    if user_id is None:
        return None
    with transaction.atomic():
        user_lock(user_id=user_id)
        held = (
            PromptGeneration.objects.select_related("session")
            .filter(requested_by_id=user_id, state=State.QUEUED, queue_reason=Reason.USER_LIMIT)
            .order_by("created_at", "id")
            .first()
        )
        if held is None:
            return None
        queue_hold(generation=held, reason=Reason.WORKER)
        generation_id = held.pk
        transaction.on_commit(lambda: generation_enqueue(generation_id=generation_id), robust=True)
    return held


def queue_positions_announce(*, limit: int = ANNOUNCE_LIMIT) -> int:
    """Periodic (beat): announce every queued generation whose place in line changed since it was
    last told. Returns how many were announced."""
    announced = 0
    for generation, ahead in queue_positions(limit=limit):
        if ahead == generation.queue_ahead:
            continue
        with transaction.atomic():
            queue_announce(generation=generation)
        announced += 1
    return announced
