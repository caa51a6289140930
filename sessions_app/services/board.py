"""Targets, tasks and sessions: the things set up before prompting.

Targets are the operator's (the admin, `manage.py target_add`, seed_demo); every write of one
goes through the allowlists in sessions_app.target_rules. Tasks and sessions are each user's own.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from sessions_app import events as event_names
from sessions_app.errors import InvalidInput, StateConflict, UnknownReference
from sessions_app.models import ProviderTarget, Session, TargetFallback, Task
from sessions_app.selectors import session_switch_targets
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


def task_create(*, owner: AbstractBaseUser, title: str) -> Task:
    title = _check_name("title", title)
    if len(title) > Task._meta.get_field("title").max_length:
        raise InvalidInput("title", "is too long")
    return Task.objects.create(owner=owner, title=title)


def session_create(
    *, owner: AbstractBaseUser, target: ProviderTarget, title: str, task: Task | None = None
) -> Session:
    """Open a session on ``target``; without a task, one is created from the title."""
    title = _check_name("title", title)
    if task is not None and task.owner_id != owner.pk:
        raise UnknownReference("task", "no such task")
    with transaction.atomic():
        if task is None:
            task = task_create(owner=owner, title=title)
        return Session.objects.create(task=task, owner=owner, target=target, title=title[:200])


def session_state_set(
    *, session: Session, state: str, recovery_actions: Sequence[str] = (), explanation: str = ""
) -> None:
    """Move the session (and its task's status) to ``state`` and record it in the event log.

    ``explanation`` (already redacted) is why the session needs attention; it rides on the event
    so every viewer's recovery card can say it without another read."""
    task_status = {
        # A finished turn hands the task back: "open" until someone prompts again or closes it.
        Session.State.IDLE: Task.Status.OPEN,
        Session.State.RUNNING: Task.Status.IN_PROGRESS,
        Session.State.WAITING_RETRY: Task.Status.IN_PROGRESS,
        Session.State.NEEDS_ATTENTION: Task.Status.NEEDS_ATTENTION,
    }.get(state)
    with transaction.atomic():
        now = timezone.now()
        Session.objects.filter(pk=session.pk).update(state=state, updated_at=now)
        session.state = state
        if task_status is not None:
            Task.objects.filter(pk=session.task_id).exclude(status=Task.Status.DONE).update(
                status=task_status, updated_at=now
            )
        payload = _state_payload(state, recovery_actions, explanation)
        if state == Session.State.NEEDS_ATTENTION:
            # The card's "Try another target" choices ride along, like the explanation.
            payload["switch_targets"] = session_switch_targets(session=session)
        event_append(session=session, type=event_names.SESSION_UPDATED, payload=payload)


def _state_payload(state: str, recovery_actions: Sequence[str], explanation: str) -> dict:
    payload = {"state": state, "recovery_actions": list(recovery_actions)}
    if explanation:
        payload["explanation"] = explanation
    return payload
