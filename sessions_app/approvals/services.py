"""Approvals: written when an agent asks, decided once by a viewer, expired or cancelled.

A decision is one conditional UPDATE on a pending row (``state=pending`` in its WHERE clause), so
of two people answering at once exactly one wins and the other is told so (ApprovalDecided, 409).
The generation waits in ``waiting_approval`` (the session shows "Needs approval") while any of its
approvals is pending; the worker's asker moves it back once the row is settled.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from sessions_app import event_types as event_names
from sessions_app.approvals.models import Approval
from sessions_app.approvals.selectors import approval_dict, approval_standing
from sessions_app.errors import ApprovalDecided, ApprovalNotFound, InvalidInput
from sessions_app.models import PromptGeneration
from sessions_app.selectors import user_may_view
from sessions_app.services.event_log import event_append
from sessions_app.services.lifecycle.approval_wait import (
    generation_approval_resume,
    generation_await_approval,
)

State = Approval.State
# Option kinds (ACP PermissionOptionKind) whose choice lets the tool run.
ALLOWING_KINDS = frozenset({"allow_once", "allow_always"})
# A standing grant answers with the agent's own "always" when it offers one (it then stops
# asking within its process), else with "once".
ALLOWING_KINDS_BY_PREFERENCE = ("allow_always", "allow_once")
# The option a timeout answers with, by preference: the agent's own refusal.
_REJECTING_KINDS = ("reject_once", "reject_always")


def _announce(approval: Approval) -> None:
    event_append(
        session=approval.session,
        type=event_names.APPROVAL_UPSERTED,
        payload={"approval": approval_dict(approval)},
    )


@dataclass(frozen=True, slots=True)
class Answer:
    """How a settled approval answers the agent: the option chosen ("" for none: the agent is
    told "cancelled")."""

    state: str
    option_id: str


def approval_request(
    *,
    generation: PromptGeneration,
    tool_call_id: str,
    kind: str,
    title: str,
    command: str,
    paths: Sequence[str],
    diff: dict[str, Any] | None,
    options: Sequence[dict[str, str]],
    now: dt.datetime | None = None,
) -> Approval:
    """Write a pending approval for the running ``generation`` and move it to waiting_approval;
    every viewer gets the card once this commits (event_append pushes after commit). A request
    that an earlier "allow always" of the session covers (``selectors.approval_standing``) is
    written already allowed, in that person's name, and the turn does not wait."""
    now = now or timezone.now()
    fields = {
        "session": generation.session,
        "generation": generation,
        "tool_call_id": tool_call_id,
        "kind": kind,
        "title": title[:500],
        "command": command,
        "paths": list(paths),
        "diff": diff,
        "options": list(options),
        "deadline": now + dt.timedelta(seconds=settings.KANDEV_APPROVAL_TIMEOUT),
    }
    standing = approval_standing(
        session_id=generation.session_id, kind=kind, title=title, command=command
    )
    granting = _option_of(options, ALLOWING_KINDS_BY_PREFERENCE) if standing else ""
    with transaction.atomic():
        if standing is not None and granting:
            approval = Approval.objects.create(
                **fields,
                state=State.ALLOWED,
                option_id=granting,
                decided_by=standing.decided_by,
                decided_at=now,
                standing=standing,
            )
        else:
            approval = Approval.objects.create(**fields)
            generation_await_approval(generation=generation)
        _announce(approval)
    return approval


def approval_answer(*, approval_id: int, now: dt.datetime | None = None) -> Answer | None:
    """The answer for the agent once the approval is settled; None while it waits. One past its
    deadline is answered reject here, so a turn never depends on the beat's sweep to end."""
    now = now or timezone.now()
    approval = Approval.objects.filter(pk=approval_id).first()
    if approval is None:
        return Answer(state=State.CANCELLED, option_id="")
    if approval.state == State.PENDING:
        if approval.deadline > now:
            return None
        with transaction.atomic():
            _settle(approval_id, state=State.TIMED_OUT, option_id=_rejecting_option(approval))
        approval.refresh_from_db()
    return Answer(state=approval.state, option_id=approval.option_id)


def approval_cancel(*, approval_id: int) -> bool:
    """The turn stopped asking (Stop, its prompt ended): the card says so. False when it was
    already settled."""
    with transaction.atomic():
        return _settle(approval_id, state=State.CANCELLED) is not None


def _settle(approval_id: int, **fields: Any) -> Approval | None:
    """Settle a pending approval; None when it was no longer pending (someone else won)."""
    now = timezone.now()
    won = Approval.objects.filter(pk=approval_id, state=State.PENDING).update(
        decided_at=now, **fields
    )
    if won != 1:
        return None
    approval = Approval.objects.select_related("session", "decided_by").get(pk=approval_id)
    _announce(approval)
    return approval


def approval_decide(
    *, approval_id: int, user: User, option_id: str, session_id: int | None = None
) -> Approval:
    """``user`` answers with one of the agent's options. ApprovalNotFound for unknown or foreign
    ids (and for one of another session than ``session_id``, when given: a page or API path names
    both), InvalidInput (422) for an option the agent did not offer, ApprovalDecided (409) when
    the approval was already settled, by someone else or by a timeout."""
    rows = Approval.objects.select_related("session").filter(pk=approval_id)
    if session_id is not None:
        rows = rows.filter(session_id=session_id)
    approval = rows.first()
    if approval is None or not user_may_view(user=user, session=approval.session):
        raise ApprovalNotFound(approval_id)
    offered = {option["option_id"]: option for option in approval.options}
    if option_id not in offered:
        raise InvalidInput("option_id", "not one of the options the agent offered")
    allowed = offered[option_id]["kind"] in ALLOWING_KINDS
    with transaction.atomic():
        settled = _settle(
            approval_id,
            state=State.ALLOWED if allowed else State.REJECTED,
            option_id=option_id,
            decided_by=user,
        )
    if settled is None:
        raise ApprovalDecided(approval_id)
    return settled


def _option_of(options: Sequence[dict[str, str]], kinds: Sequence[str]) -> str:
    for kind in kinds:
        for option in options:
            if option.get("kind") == kind:
                return str(option.get("option_id", ""))
    return ""


def _rejecting_option(approval: Approval) -> str:
    # "": the agent offered no refusal, and the asker answers "cancelled".
    return _option_of(approval.options, _REJECTING_KINDS)


def approvals_expire(*, now: dt.datetime | None = None) -> list[int]:
    """Reject every pending approval past its deadline (the beat's sweep). Returns their ids."""
    now = now or timezone.now()
    expired = []
    for approval in Approval.objects.filter(state=State.PENDING, deadline__lte=now):
        with transaction.atomic():
            if _settle(approval.pk, state=State.TIMED_OUT, option_id=_rejecting_option(approval)):
                expired.append(approval.pk)
    return expired


def approvals_cancel(*, generation_id: int) -> list[int]:
    """Cancel the generation's pending approvals (Stop, Cancel, the turn ended). Returns ids."""
    cancelled = []
    for approval in Approval.objects.filter(generation_id=generation_id, state=State.PENDING):
        with transaction.atomic():
            if _settle(approval.pk, state=State.CANCELLED):
                cancelled.append(approval.pk)
    return cancelled


def approvals_orphans_cancel() -> list[int]:
    """Cancel pending approvals whose turn no worker holds any more (it ended, or its worker was
    lost): nobody would act on their answer. The beat's sweep; returns their ids."""
    orphans = Approval.objects.filter(state=State.PENDING).exclude(
        generation__state__in=PromptGeneration.WORKER_STATES
    )
    cancelled = []
    for approval_id in orphans.values_list("pk", flat=True):
        with transaction.atomic():
            if _settle(approval_id, state=State.CANCELLED):
                cancelled.append(approval_id)
    return cancelled


def approval_resume(*, generation: PromptGeneration) -> bool:
    """The worker got its answer: the generation runs again (the session shows it running),
    unless another of its requests still waits for a person."""
    if Approval.objects.filter(generation=generation, state=State.PENDING).exists():
        return False
    return generation_approval_resume(generation=generation)
