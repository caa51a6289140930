"""Tasks on the board and the sessions opened under them: each person's own.

Every change tells the owner's open boards (``push.board_push``) after commit. A session's state
is the lifecycle's (``services/lifecycle``), never written here.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from sessions_app.errors import InvalidInput, StateConflict, UnknownReference
from sessions_app.models import PromptGeneration, ProviderTarget, Session, Task
from sessions_app.push import board_push
from sessions_app.services.caps import session_rate_take
from sessions_app.services.lifecycle.session_state import task_status_of
from sessions_app.services.targets import name_check
from sessions_app.workspaces import wording
from sessions_app.workspaces.services import (
    task_workspace_bind,
    worktree_remove,
    worktree_reopen,
)


def _title_clean(title: str) -> str:
    """A task's or session's title: a name (text_rules), its runs of spaces made one."""
    if not isinstance(title, str):
        raise InvalidInput("title", "must be text")
    title = " ".join(name_check("title", title).split())
    limit = Task._meta.get_field("title").max_length
    if limit is not None and len(title) > limit:
        raise InvalidInput("title", f"must be at most {limit} characters")
    return title


def task_create(*, owner: User, title: str, project_id: int | None = None) -> Task:
    """A new task of ``owner``'s; with ``project_id``, bound to that project (one they may use:
    UnknownReference alike for one they may not and one that does not exist), so its agents
    run in a worktree of its own."""
    with transaction.atomic():
        task = Task.objects.create(owner=owner, title=_title_clean(title))
        if project_id is not None:
            task_workspace_bind(task=task, user=owner, project_id=project_id)
        _board_changed(owner_id=task.owner_id)
    return task


def task_rename(*, task: Task, title: str) -> Task:
    """Give the task a new title (trimmed, never empty); every board of its owner follows."""
    title = _title_clean(title)
    with transaction.atomic():
        Task.objects.filter(pk=task.pk).update(title=title, updated_at=timezone.now())
        task.title = title
        _board_changed(owner_id=task.owner_id)
    return task


def task_archive(*, task: Task) -> Task:
    """Take the task off the board; its sessions and history stay, and its worktree (if bound
    to a project) is removed, its branch kept. Archiving twice is a no-op. StateConflict while
    one of its sessions has a prompt queued, running or waiting: the worktree would vanish under
    its agent."""
    if PromptGeneration.objects.filter(
        session__task_id=task.pk, state__in=PromptGeneration.ACTIVE_STATES
    ).exists():
        raise StateConflict("archive", wording.TASK_BUSY_ARCHIVE)
    with transaction.atomic():
        Task.objects.filter(pk=task.pk, archived_at__isnull=True).update(archived_at=timezone.now())
        task.refresh_from_db(fields=["archived_at"])
        _board_changed(owner_id=task.owner_id)
    worktree_remove(task_id=task.pk)
    return task


def task_unarchive(*, task: Task) -> Task:
    """Bring an archived task back to the board."""
    with transaction.atomic():
        Task.objects.filter(pk=task.pk).update(archived_at=None, updated_at=timezone.now())
        task.archived_at = None
        # Its next turn checks the kept branch out again.
        worktree_reopen(task_id=task.pk)
        _board_changed(owner_id=task.owner_id)
    return task


def task_mark_done(*, task: Task) -> Task:
    """Move the task to Done, the person's word that it is finished: the lifecycle's projection
    of its sessions leaves a done task alone, so it stays there until reopened. Done twice is a
    no-op."""
    with transaction.atomic():
        Task.objects.filter(pk=task.pk).update(status=Task.Status.DONE, updated_at=timezone.now())
        task.status = Task.Status.DONE
        _board_changed(owner_id=task.owner_id)
    return task


def task_reopen(*, task: Task) -> Task:
    """Take the task out of Done: it shows what its sessions say again (working while one works,
    needing attention while one does, else open)."""
    with transaction.atomic():
        locked = Task.objects.select_for_update(no_key=True).get(pk=task.pk)
        states = set(Session.objects.filter(task_id=task.pk).values_list("state", flat=True))
        locked.status = task_status_of(states)
        Task.objects.filter(pk=task.pk).update(status=locked.status, updated_at=timezone.now())
        task.status = locked.status
        _board_changed(owner_id=task.owner_id)
    return task


def task_status_set(*, task: Task, status: str) -> Task:
    """What the board's "Move to" and a drag between columns ask for: ``done``, or ``open`` to
    reopen. The other columns are projected from the sessions, never set: InvalidInput."""
    if status == Task.Status.DONE:
        return task_mark_done(task=task)
    if status == Task.Status.OPEN:
        return task_reopen(task=task)
    raise InvalidInput("status", "must be done or open (the other columns follow its sessions)")


def session_create(
    *,
    owner: User,
    target: ProviderTarget,
    title: str,
    task: Task | None = None,
    project_id: int | None = None,
) -> Session:
    """Open a session on ``target``: under ``task`` (one of the owner's), or, without one, under a
    new task named after the session (bound to ``project_id`` if given, see task_create). An
    archived task comes back to the board with it.
    CapReached when the owner opened KANDEV_SESSIONS_PER_MINUTE sessions in the last minute."""
    title = _title_clean(title)
    if task is not None and task.owner_id != owner.pk:
        raise UnknownReference("task", "no such task")
    with transaction.atomic():
        session_rate_take(user_id=owner.pk)
        if task is None:
            task = task_create(owner=owner, title=title, project_id=project_id)
        elif task.archived_at is not None:
            task_unarchive(task=task)
        session = Session.objects.create(task=task, owner=owner, target=target, title=title)
        Task.objects.filter(pk=task.pk).update(updated_at=timezone.now())
        _board_changed(owner_id=owner.pk)
    return session


def _board_changed(*, owner_id: int) -> None:
    """Every open board of the owner re-reads its tasks once this transaction commits."""
    transaction.on_commit(lambda: board_push(owner_id=owner_id))
