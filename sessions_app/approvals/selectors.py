"""Approvals as viewers read them: the card's fields, and a session's approvals for its snapshot
(a reload or a late viewer sees a pending card and how earlier ones were decided)."""

from __future__ import annotations

from typing import Any

from sessions_app.approvals.models import Approval
from sessions_app.models import Session
from sessions_app.selectors import session_snapshot


def approval_dict(approval: Approval) -> dict[str, Any]:
    """What the card shows; rides on the approval.upserted event and in the snapshot."""
    return {
        "id": approval.pk,
        "tool_call_id": approval.tool_call_id,
        "kind": approval.kind,
        "title": approval.title,
        "command": approval.command,
        "paths": list(approval.paths),
        "diff": approval.diff,
        "options": list(approval.options),
        "state": approval.state,
        "option_id": approval.option_id,
        "decided_by": approval.decided_by.username if approval.decided_by else "",
        "decided_at": approval.decided_at.isoformat() if approval.decided_at else None,
        # Allowed without asking, by an earlier "allow always" of the session.
        "standing": approval.standing_id is not None,
        "created": approval.created_at.isoformat(),
        "deadline": approval.deadline.isoformat(),
    }


def session_approvals(*, session_id: int) -> list[dict[str, Any]]:
    """Every approval of the session, oldest first, as approval.upserted carries them."""
    rows = Approval.objects.filter(session_id=session_id).select_related("decided_by")
    return [approval_dict(approval) for approval in rows]


# The kinds of tool one "allow always" covers as a whole (every edit of the session, as the
# agents' own "always" does); a command is covered only when it is the same command, and a tool
# of no known kind only when it has the same title.
_WHOLE_KIND = frozenset({"read", "edit", "delete", "move", "search", "fetch", "think"})


def approval_standing(*, session_id: int, kind: str, title: str, command: str) -> Approval | None:
    """The earliest "allow always" a person gave in this session that covers a request of this
    kind (and command, or title), or None."""
    allowed = Approval.objects.filter(
        session_id=session_id, state=Approval.State.ALLOWED, standing__isnull=True, kind=kind
    ).select_related("decided_by")
    for approval in allowed:
        chosen_kinds = [
            option.get("kind") for option in approval.options
            if option.get("option_id") == approval.option_id
        ]  # fmt: skip
        if chosen_kinds != ["allow_always"]:
            continue
        if kind == "execute":
            covered = bool(command) and approval.command == command
        elif kind in _WHOLE_KIND:
            covered = True
        else:
            covered = bool(title) and approval.title == title
        if covered:
            return approval
    return None


def session_approval(*, session_id: int, approval_id: int) -> dict[str, Any] | None:
    """One approval of the session as its card shows it; None for an id of another session."""
    approval = (
        Approval.objects.filter(pk=approval_id, session_id=session_id)
        .select_related("decided_by")
        .first()
    )
    return approval_dict(approval) if approval is not None else None


def session_page_snapshot(*, session: Session) -> dict[str, Any]:
    """The session snapshot a page or socket starts from, with the session's approval cards.

    Composed here rather than in sessions_app.selectors, which this package imports (the other
    way round would be an import cycle). The approvals are read after the snapshot, so they are
    never older than its ``last_seq``: an approval.upserted event replayed on top replaces its
    card by id, so a viewer converges on the database either way."""
    snapshot = session_snapshot(session=session)
    snapshot["approvals"] = session_approvals(session_id=session.pk)
    return snapshot
