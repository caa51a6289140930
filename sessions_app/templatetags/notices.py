"""The retry banner's words. The browser (static/js/live.js) re-computes the countdown every
second with the same rule, so the text a page is rendered with is the text it keeps showing."""

from __future__ import annotations

import math
from typing import Any

from django import template

register = template.Library()

RETRYING_NOW = "Retrying now…"
# A turn held by the target's shared health has made no failing call: nothing is retried, the
# message is sent when the wait is over (the banner's attempt is 0).
SENDING = "Sending"


def countdown_text(*, remaining_ms: int, verb: str = "Retrying") -> str:
    """ "Retrying in 0:09" while time is left (whole seconds rounded up, so 0:00 never shows)."""
    if remaining_ms <= 0:
        return f"{verb} now…"
    seconds = math.ceil(remaining_ms / 1000)
    return f"{verb} in {seconds // 60}:{seconds % 60:02d}"


@register.filter
def notice_countdown(notice: dict[str, Any], now_ms: int) -> str:
    verb = "Retrying" if notice.get("attempt") else SENDING
    return countdown_text(remaining_ms=int(notice["retry_at_ms"]) - int(now_ms), verb=verb)


@register.filter
def reason_sentence(reason: str) -> str:
    """The reason as a sentence: "Provider overloaded" -> "Provider overloaded."."""
    reason = (reason or "").strip() or "The provider is having trouble"
    return reason if reason.endswith((".", "!", "?")) else f"{reason}."
