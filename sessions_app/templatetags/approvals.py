"""An approval card as people read it (templates/sessions_app/partials/approval.html).

The card's fields are the agent's (``sessions_app.approvals.selectors.approval_dict``): its title,
command, paths and proposed change are text a stranger's prompt may steer, so everything here
escapes (format_html) and the change goes through the app's one diff renderer. Times are written
as UTC on the server, inside ``<time class="clock-time">`` that static/js/live.js turns into the
reader's own clock.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from sessions_app.approvals.models import Approval
from sessions_app.approvals.services import ALLOWING_KINDS
from sessions_app.diffs import diff_html, diff_stats, unified_diff

register = template.Library()

State = Approval.State
# What the decided line says a person chose, by the kind of the agent's option (ACP's
# PermissionOptionKind); the agent's own label ("Yes, and don't ask again") stays on its button.
_VERDICTS = {
    "allow_once": "Allowed once",
    "allow_always": "Allowed for the rest of this session",
    "reject_once": "Rejected",
    "reject_always": "Rejected for the rest of this session",
}


def _moment(iso: str | None) -> dt.datetime | None:
    if not iso:
        return None
    try:
        return dt.datetime.fromisoformat(iso)
    except ValueError:
        return None


@register.filter
def with_approvals(
    messages: list[dict[str, Any]], approvals: list[dict[str, Any]] | None
) -> list[tuple[dict[str, Any] | None, dict[str, Any] | None]]:
    """The transcript's rows in the order they happened: ``(message, None)`` or ``(None,
    approval)``. An approval goes before the first message created after it, so it sits under
    the tool call that asked (a live card is appended at the end, which is the same place)."""
    if not approvals:
        return [(message, None) for message in messages]
    rows: list[tuple[dict[str, Any] | None, dict[str, Any] | None]] = []
    waiting = list(approvals)
    for message in messages:
        created = _moment(message.get("created"))
        while waiting and created is not None and _before(waiting[0], created):
            rows.append((None, waiting.pop(0)))
        rows.append((message, None))
    rows.extend((None, approval) for approval in waiting)
    return rows


def _before(approval: dict[str, Any], moment: dt.datetime) -> bool:
    asked = _moment(approval.get("created"))
    return asked is not None and asked < moment


@register.filter
def option_style(kind: str | None) -> str:
    """The button's class suffix: an option that lets the tool run is "allow", any other one
    (a refusal, or a kind we do not know) "reject"."""
    return "allow" if kind in ALLOWING_KINDS else "reject"


@register.filter
def paths_beside(paths: list[str] | None, diff: Any) -> list[str]:
    """The files to list above the change: all of them, but the one the diff shows by name."""
    shown = diff.get("path") if isinstance(diff, dict) else None
    return [path for path in paths or [] if path != shown]


@register.filter
def clock_time(iso: str | None) -> str:
    """ "12:03 UTC": the text without script (live.js shows the reader's local time)."""
    moment = _moment(iso)
    return f"{moment.astimezone(dt.UTC):%H:%M} UTC" if moment is not None else ""


def _clock(iso: str | None) -> SafeString:
    return format_html(
        '<time class="clock-time" datetime="{}">{}</time>', iso or "", clock_time(iso)
    )


def _waited(approval: dict[str, Any]) -> str:
    """How long the request waited before it timed out, as the line says it: "30 min"."""
    asked, deadline = _moment(approval.get("created")), _moment(approval.get("deadline"))
    if asked is None or deadline is None:
        return ""
    seconds = max(0, round((deadline - asked).total_seconds()))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 2 * 3600:
        return f"{round(seconds / 60)} min"
    return f"{round(seconds / 3600)} h"


def _chosen(approval: dict[str, Any]) -> dict[str, Any]:
    for option in approval.get("options") or []:
        if isinstance(option, dict) and option.get("option_id") == approval.get("option_id"):
            return option
    return {}


@register.simple_tag
def approval_outcome_line(approval: dict[str, Any]) -> SafeString:
    """The decided card's one line: "Allowed once by alice at 12:03", "Rejected by bob at 12:05",
    "No answer in 30 min: rejected", "Cancelled when the turn stopped"."""
    state = approval.get("state")
    if state == State.TIMED_OUT:
        waited = _waited(approval)
        return (
            format_html("No answer in {}: rejected", waited)
            if waited
            else mark_safe("No answer in time: rejected")
        )
    if state == State.CANCELLED:
        return mark_safe("Cancelled when the turn stopped")
    if state not in (State.ALLOWED, State.REJECTED):
        return mark_safe("")
    chosen = _chosen(approval)
    verdict = _VERDICTS.get(str(chosen.get("kind", "")))
    if approval.get("standing"):
        # Nobody was asked: an earlier "allow always" of the session covered it.
        verdict = "Allowed without asking (always allowed earlier in this session)"
    if verdict is None:  # an option kind we do not know: the agent's own words for it
        fallback = "Allowed" if state == State.ALLOWED else "Rejected"
        name = chosen.get("name")
        verdict = f"{fallback} ({name})" if name else fallback
    who = approval.get("decided_by")
    by = format_html(" by <strong>{}</strong>", who) if who else mark_safe("")
    when = approval.get("decided_at")
    at = format_html(" at {}", _clock(when)) if when else mark_safe("")
    return format_html("{}{}{}", verdict, by, at)


@register.simple_tag
def approval_deadline(approval: dict[str, Any]) -> SafeString:
    return _clock(approval.get("deadline"))


@register.simple_tag
def approval_diff(diff: Any) -> SafeString:
    """The proposed change as the tool card and the review show one: the file with its lines
    added and removed, then the rendered patch. Nothing when the agent sent no diff."""
    if not isinstance(diff, dict):
        return mark_safe("")
    path = str(diff.get("path") or "")
    old, new = str(diff.get("old_text") or ""), str(diff.get("new_text") or "")
    patch = unified_diff(path=path, old=old, new=new)
    if not patch:
        return format_html(
            '<p class="approval-diff-head"><code>{}</code> (no change)</p>', path or "file"
        )
    stats = diff_stats(patch)
    added = sum(stat.added for stat in stats)
    removed = sum(stat.removed for stat in stats)
    return format_html(
        '<div class="approval-diff"><p class="approval-diff-head"><code>{}</code> '
        '<span class="diff-added">+{}</span> <span class="diff-removed">\N{MINUS SIGN}{}</span>'
        "{}</p>{}</div>",
        path,
        added,
        removed,
        " (new file)" if not old and new else "",
        diff_html(patch),
    )
