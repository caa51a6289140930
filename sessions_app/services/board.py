"""Targets, tasks and sessions: the things set up before prompting.

Targets are the operator's (the admin, `manage.py target_add`, seed_demo); every write of one
goes through the allowlists in sessions_app.target_rules. Tasks and sessions are each user's own;
every change to them tells the owner's open boards (``push.board_push``) after commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from sessions_app import events as event_names
from sessions_app.errors import InvalidInput, StateConflict, UnknownReference
from sessions_app.models import ProviderTarget, Session, TargetFallback, Task
from sessions_app.push import board_push
from sessions_app.selectors import session_switch_targets
from sessions_app.services.caps import session_rate_take
from sessions_app.services.events import event_append
from sessions_app.target_rules import target_problems
from sessions_app.text_rules import name_problem, single_line_problem

DIRECT_KINDS = (ProviderTarget.Kind.ANTHROPIC, ProviderTarget.Kind.OPENAI)


def target_fields_check(
    *, kind: str, base_url: str = "", model: str = "", api_key_env: str = "", agent_kind: str = ""
) -> None:
    """Raise InvalidInput for the first field the rules or the operator's allowlists refuse."""
    for field, value in [
        ("base_url", base_url),
        ("model", model),
        ("api_key_env", api_key_env),
        ("agent_kind", agent_kind),
    ]:
        problem = single_line_problem(value)
        if problem is not None:
            raise InvalidInput(field, problem)
    if kind == ProviderTarget.Kind.ACP and agent_kind not in ProviderTarget.AgentKind.values:
        kinds = ", ".join(ProviderTarget.AgentKind.values)
        raise InvalidInput("agent_kind", f"ACP targets name an agent kind: one of {kinds}")
    if kind != ProviderTarget.Kind.ACP and agent_kind:
        raise InvalidInput("agent_kind", "is for ACP targets only")
    problems = target_problems(
        kind=kind, base_url=base_url, api_key_env=api_key_env, agent_kind=agent_kind
    )
    if problems:
        raise InvalidInput(problems[0].field, problems[0].message)
    if kind in DIRECT_KINDS and not model:
        raise InvalidInput("model", "is required for direct provider targets")


def _check_name(field: str, value: str) -> str:
    """``value`` stripped, or InvalidInput when it cannot be a name (see text_rules)."""
    problem = name_problem(value)
    if problem is not None:
        raise InvalidInput(field, problem)
    return value.strip()


def target_create(
    *,
    name: str,
    kind: str,
    base_url: str = "",
    model: str = "",
    api_key_env: str = "",
    agent_kind: str = "",
    fallbacks: Sequence[int] = (),
) -> ProviderTarget:
    """Create a provider target with its ordered fallbacks (ids of existing targets). For staff
    only: no view or API endpoint calls it."""
    name = _check_name("name", name)
    target_fields_check(
        kind=kind, base_url=base_url, model=model, api_key_env=api_key_env, agent_kind=agent_kind
    )
    fallback_ids = list(fallbacks)
    if len(set(fallback_ids)) != len(fallback_ids):
        raise InvalidInput("fallbacks", "must not name a target twice")
    with transaction.atomic():
        if ProviderTarget.objects.filter(name=name).exists():
            raise StateConflict("name", "a target with this name already exists")
        known = set(ProviderTarget.objects.filter(pk__in=fallback_ids).values_list("pk", flat=True))
        unknown = [str(i) for i in fallback_ids if i not in known]
        if unknown:
            raise UnknownReference("fallbacks", f"no such target: {', '.join(unknown)}")
        target = ProviderTarget.objects.create(
            name=name,
            kind=kind,
            base_url=base_url,
            model=model,
            api_key_env=api_key_env,
            agent_kind=agent_kind,
        )
        TargetFallback.objects.bulk_create(
            TargetFallback(target=target, fallback_id=fallback_id, position=position)
            for position, fallback_id in enumerate(fallback_ids)
        )
    return target


def target_update(
    *,
    target: ProviderTarget,
    kind: str | None = None,
    base_url: str | None = None,
    model: str | None = None,
    api_key_env: str | None = None,
    agent_kind: str | None = None,
) -> ProviderTarget:
    """Change the given fields of an existing target (None leaves one as it is), checked like a
    new target as a whole."""
    changes = {
        field: value
        for field, value in {
            "kind": kind,
            "base_url": base_url,
            "model": model,
            "api_key_env": api_key_env,
            "agent_kind": agent_kind,
        }.items()
        if value is not None
    }
    fields = {
        field: changes.get(field, getattr(target, field))
        for field in ("kind", "base_url", "model", "api_key_env", "agent_kind")
    }
    target_fields_check(**fields)
    if changes:
        ProviderTarget.objects.filter(pk=target.pk).update(**changes)
        for field, value in changes.items():
            setattr(target, field, value)
    return target


def _title_clean(title: str) -> str:
    """A task's or session's title: a name (text_rules), its runs of spaces made one."""
    if not isinstance(title, str):
        raise InvalidInput("title", "must be text")
    title = " ".join(_check_name("title", title).split())
    limit = Task._meta.get_field("title").max_length
    if limit is not None and len(title) > limit:
        raise InvalidInput("title", f"must be at most {limit} characters")
    return title


def task_create(*, owner: User, title: str) -> Task:
    task = Task.objects.create(owner=owner, title=_title_clean(title))
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
    """Take the task off the board; its sessions and history stay. Archiving twice is a no-op."""
    with transaction.atomic():
        Task.objects.filter(pk=task.pk, archived_at__isnull=True).update(
            archived_at=timezone.now()
        )
        task.refresh_from_db(fields=["archived_at"])
        _board_changed(owner_id=task.owner_id)
    return task


def task_unarchive(*, task: Task) -> Task:
    """Bring an archived task back to the board."""
    with transaction.atomic():
        Task.objects.filter(pk=task.pk).update(archived_at=None, updated_at=timezone.now())
        task.archived_at = None
        _board_changed(owner_id=task.owner_id)
    return task


def session_create(
    *, owner: User, target: ProviderTarget, title: str, task: Task | None = None
) -> Session:
    """Open a session on ``target``: under ``task`` (one of the owner's), or, without one, under a
    new task named after the session. An archived task comes back to the board with it.
    CapReached when the owner opened KANDEV_SESSIONS_PER_MINUTE sessions in the last minute."""
    title = _title_clean(title)
    if task is not None and task.owner_id != owner.pk:
        raise UnknownReference("task", "no such task")
    with transaction.atomic():
        session_rate_take(user_id=owner.pk)
        if task is None:
            task = task_create(owner=owner, title=title)
        elif task.archived_at is not None:
            task_unarchive(task=task)
        session = Session.objects.create(task=task, owner=owner, target=target, title=title)
        Task.objects.filter(pk=task.pk).update(updated_at=timezone.now())
        _board_changed(owner_id=owner.pk)
    return session


def _board_changed(*, owner_id: int) -> None:
    """Every open board of the owner re-reads its tasks once this transaction commits."""
    transaction.on_commit(lambda: board_push(owner_id=owner_id))


def session_state_set(
    *,
    session: Session,
    state: str,
    recovery_actions: Sequence[str] = (),
    explanation: str = "",
    queue: dict | None = None,
) -> None:
    """Move the session (and its task's status) to ``state`` and record it in the event log.

    ``explanation`` (already redacted) is why the session needs attention; it rides on the event
    so every viewer's recovery card can say it without another read; ``queue`` (a queued
    session's place in line, ``selectors.queue_dict``) likewise for the queued badge."""
    with transaction.atomic():
        now = timezone.now()
        Session.objects.filter(pk=session.pk).update(state=state, updated_at=now)
        session.state = state
        # The task shows the most urgent state of all its sessions, not the last one written.
        states = set(Session.objects.filter(task_id=session.task_id).values_list("state", flat=True))
        Task.objects.filter(pk=session.task_id).exclude(status=Task.Status.DONE).update(
            status=task_status_of(states), updated_at=now
        )
        payload = _state_payload(state, recovery_actions, explanation, queue)
        if state == Session.State.NEEDS_ATTENTION:
            # The card's "Try another target" choices ride along, like the explanation.
            payload["switch_targets"] = session_switch_targets(session=session)
        event_append(session=session, type=event_names.SESSION_UPDATED, payload=payload)


def task_status_of(session_states: set[str]) -> str:
    """A task needs attention when any session does, is in progress while any works, else open."""
    if Session.State.NEEDS_ATTENTION in session_states:
        return Task.Status.NEEDS_ATTENTION
    if session_states & {
        Session.State.QUEUED, Session.State.RUNNING, Session.State.WAITING_RETRY
    }:
        return Task.Status.IN_PROGRESS
    return Task.Status.OPEN


def _state_payload(
    state: str, recovery_actions: Sequence[str], explanation: str, queue: dict | None
) -> dict:
    payload: dict[str, Any] = {"state": state, "recovery_actions": list(recovery_actions)}
    if explanation:
        payload["explanation"] = explanation
    if queue is not None:
        payload["queue"] = queue
    return payload
