"""Approvals as viewers read them: the card's fields, and a session's approvals for its snapshot
(a reload or a late viewer sees a pending card and how earlier ones were decided)."""

from __future__ import annotations

from typing import Any

from sessions_app.approvals.models import Approval


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
        "created": approval.created_at.isoformat(),
        "deadline": approval.deadline.isoformat(),
    }


def session_approvals(*, session_id: int) -> list[dict[str, Any]]:
    """Every approval of the session, oldest first, as approval.upserted carries them."""
    rows = Approval.objects.filter(session_id=session_id).select_related("decided_by")
    return [approval_dict(approval) for approval in rows]
