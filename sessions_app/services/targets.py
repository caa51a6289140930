"""Provider targets: the operator's, checked on every write; and a session's switch to another.

Targets are written by the admin, `manage.py target_add` and seed_demo; every write goes through
the allowlists in sessions_app.target_rules. A person switches their session's target from the
failure card ("Try another target"); a retry waiting on the old target never fires.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth.models import User
from django.db import transaction

from sessions_app.errors import InvalidInput, SessionNotFound, StateConflict, UnknownReference
from sessions_app.models import PermissionPolicyChoice, ProviderTarget, Session, TargetFallback
from sessions_app.selectors import session_switch_targets, user_may_view
from sessions_app.services.lifecycle.generation import generation_supersede_waiting
from sessions_app.services.lifecycle.session_state import session_card_refresh
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


def _policy_check(policy: str) -> None:
    if policy not in PermissionPolicyChoice.values:
        choices = ", ".join(PermissionPolicyChoice.values)
        raise InvalidInput("permission_policy", f"must be one of {choices}")


def target_create(
    *,
    name: str,
    kind: str,
    base_url: str = "",
    model: str = "",
    api_key_env: str = "",
    agent_kind: str = "",
    permission_policy: str = PermissionPolicyChoice.ASK,
    fallbacks: Sequence[int] = (),
) -> ProviderTarget:
    """Create a provider target with its ordered fallbacks (ids of existing targets). For staff
    only: no view or API endpoint calls it."""
    name = name_check("name", name)
    target_fields_check(
        kind=kind, base_url=base_url, model=model, api_key_env=api_key_env, agent_kind=agent_kind
    )
    _policy_check(permission_policy)
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
            permission_policy=permission_policy,
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
    permission_policy: str | None = None,
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
            "permission_policy": permission_policy,
        }.items()
        if value is not None
    }
    if permission_policy is not None:
        _policy_check(permission_policy)
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


def name_check(field: str, value: str) -> str:
    """``value`` stripped, or InvalidInput when it cannot be a name (see text_rules)."""
    problem = name_problem(value)
    if problem is not None:
        raise InvalidInput(field, problem)
    return value.strip()


def session_target_set(*, session: Session, user: User, target: ProviderTarget) -> Session:
    """Switch the session to another target. A retry waiting on the old target is disarmed."""
    if not user_may_view(user=user, session=session):
        raise SessionNotFound(session.pk)
    with transaction.atomic():
        locked = Session.objects.select_for_update(no_key=True).get(pk=session.pk)
        # The superseded generation settles the session idle; a card needing attention is
        # announced again, so every viewer's names the new target, and Resume now runs on it.
        generation_supersede_waiting(session=locked)
        Session.objects.filter(pk=locked.pk).update(target=target)
        locked.target = target
        session_card_refresh(session=locked)
    session.target = target
    return locked


def session_target_switch(*, session: Session, user: User, target_id: object) -> Session:
    """The failure card's "Try another target": ``target_id`` as posted, checked against the
    targets the card offers (every other target), then ``session_target_set``."""
    if not user_may_view(user=user, session=session):
        raise SessionNotFound(session.pk)
    try:
        wanted = int(str(target_id))
    except ValueError:
        raise InvalidInput("target", "choose a target from the list") from None
    offered = {t["id"] for t in session_switch_targets(session=session)}
    if wanted not in offered:
        raise InvalidInput("target", "choose another target from the list")
    target = ProviderTarget.objects.get(pk=wanted)
    return session_target_set(session=session, user=user, target=target)
