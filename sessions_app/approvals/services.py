"""Approvals: written when an agent asks, decided once by a viewer, expired or cancelled.

A decision is one conditional UPDATE on a pending row (``state=pending`` in its WHERE clause), so
of two people answering at once exactly one wins and the other is told so (ApprovalDecided, 409).
The generation waits in ``waiting_approval`` (the session shows "Needs approval") while any of its
approvals is pending; the worker's asker moves it back once the row is settled.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from sessions_app import event_types as event_names
from sessions_app.approvals.models import Approval
from sessions_app.approvals.selectors import approval_dict
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
# The option a timeout answers with, by preference: the agent's own refusal.
_REJECTING_KINDS = ("reject_once", "reject_always")


def _announce(approval: Approval) -> None:
    event_append(
        session=approval.session,
        type=event_names.APPROVAL_UPSERTED,
        payload={"approval": approval_dict(approval)},
    )


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
    every viewer gets the card once this commits (event_append pushes after commit)."""
    now = now or timezone.now()
    with transaction.atomic():
        approval = Approval.objects.create(
            session=generation.session,
            generation=generation,
            tool_call_id=tool_call_id,
            kind=kind,
            title=title[:500],
            command=command,
            paths=list(paths),
            diff=diff,
            options=list(options),
            deadline=now + dt.timedelta(seconds=settings.KANDEV_APPROVAL_TIMEOUT),
        )
        generation_await_approval(generation=generation)
        _announce(approval)
    return approval


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


def _rejecting_option(approval: Approval) -> str:
    for kind in _REJECTING_KINDS:
        for option in approval.options:
            if option["kind"] == kind:
                return str(option["option_id"])
    return ""  # the agent offered no refusal: the asker answers "cancelled"


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


def approval_resume(*, generation: PromptGeneration) -> bool:
    """The worker got its answer: the generation runs again (the session shows it running)."""
    return generation_approval_resume(generation=generation)
