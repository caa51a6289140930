"""Template helpers for transcript rows, state badges and the composer.

Everything here escapes: transcript text is user and model output, so it is never marked safe.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django import template

from recovery import wording
from sessions_app.models import Message, Session

register = template.Library()

_ROLE_LABELS: dict[str, str] = {
    Message.Role.USER: "User",
    Message.Role.ASSISTANT: "Agent",
    Message.Role.THINKING: "Thinking",
    Message.Role.TOOL_CALL: "Tool call",
    Message.Role.TOOL_RESULT: "Tool result",
}
# A stop button replaces Send while a generation is active, so the person can always end it
# (while it waits for an approval too: Stop then answers the request "cancelled").
ACTIVE_STATES = frozenset(
    {
        Session.State.QUEUED,
        Session.State.RUNNING,
        Session.State.WAITING_RETRY,
        Session.State.NEEDS_APPROVAL,
    }
)


@register.filter
def role_label(message: dict[str, Any]) -> str:
    if message.get("role") == Message.Role.USER:
        author = (message.get("metadata") or {}).get("author")
        if author:
            return str(author)
    role = str(message.get("role", ""))
    return _ROLE_LABELS.get(role, role)


@register.filter
def state_label(state: str) -> str:
    try:
        return Session.State(state).label
    except ValueError:
        return state


@register.filter
def get_item(mapping: dict | None, key: Any) -> Any:
    return (mapping or {}).get(key)


@register.filter
def queue_label(queue: dict[str, Any] | None) -> str:
    """A queued session's place in line, as its badge says it: "2 ahead", "next"."""
    if not queue:
        return ""
    ahead = int(queue.get("ahead") or 0)
    reason = queue.get("reason") or ""
    waiting_for = _QUEUE_WAITS.get(reason, "")
    place = f"{ahead} ahead" if ahead else "next"
    return f"{place}, {waiting_for}" if waiting_for else place


_QUEUE_WAITS = {
    "user_limit": "after the sender's running prompts",
    "agent_slot": "waiting for an agent slot",
    "workspace": "waiting for the other session of this task to finish",
}


@register.filter
def is_active_state(state: str) -> bool:
    return state in ACTIVE_STATES


@register.filter
def pretty_json(value: Any) -> str:
    """Tool arguments as readable JSON; the template escapes the result like any other text."""
    if value in (None, "", {}):
        return ""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


@register.filter
def text_length(text: str | None) -> int:
    """Length in code points, the unit message.appended offsets count in (Python's len)."""
    return len(text or "")


@register.filter
def absolute_time(iso: str | None) -> str:
    """ "1 Dec 2026, 09:14 UTC" for a stored ISO timestamp; the browser shows it relative and in
    local time, keeping this as the title (hover) and as the text without JavaScript."""
    if not iso:
        return ""
    try:
        moment = datetime.fromisoformat(iso).astimezone(UTC)
    except ValueError:
        return ""
    return f"{moment.day} {moment:%b %Y, %H:%M} UTC"


@register.filter
def card_headline(explanation: str | None) -> str:
    """The plain-words part of a failure card (recovery.wording.with_detail built it)."""
    return wording.split_detail(explanation or "")[0]


@register.filter
def card_detail(explanation: str | None) -> str:
    """The card's redacted technical detail, shown behind a disclosure; "" when there is none."""
    return wording.split_detail(explanation or "")[1]


@register.simple_tag
def new_context_line() -> str:
    """The divider above a Start fresh resend."""
    return wording.NEW_CONTEXT


@register.simple_tag
def superseded_line() -> str:
    """The flag on a partial answer that Resume ran again."""
    return wording.SUPERSEDED_BY_RESUME


@register.filter
def is_collapsed_replacement(reason: str | None) -> bool:
    """Rows replaced by Regenerate or an edit close behind a disclosure; a partial that Resume ran
    again stays open, flagged (it is visibly different from the full answer below it)."""
    return bool(reason) and reason != "resume"


@register.filter
def replaced_summary(reason: str) -> str:
    return wording.replaced_summary(reason)


@register.filter
def recovered_line(recovered: dict[str, Any] | None) -> str:
    """ "Recovered after 2 retries (provider overloaded)" from ``metadata["recovered"]``."""
    if not isinstance(recovered, dict):
        return ""
    try:
        retries = int(recovered.get("retries", 0))
    except (TypeError, ValueError):
        return ""
    return (
        wording.recovered_line(str(recovered.get("code", "")), retries=retries) if retries else ""
    )
