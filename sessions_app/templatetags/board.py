"""The board's badges: a session's live state in words (with "Queued" while its prompt waits for
a worker) and the countdown of a session waiting to retry, rendered like the banner's."""

from __future__ import annotations

from datetime import datetime

from django import template

from sessions_app.models import PromptGeneration, Session
from sessions_app.selectors import board_session_state

register = template.Library()


@register.filter
def board_state(session: Session) -> str:
    return board_session_state(session)


@register.filter
def board_state_label(state: str) -> str:
    for choices in (Session.State, PromptGeneration.State):
        try:
            return str(choices(state).label)
        except ValueError:
            continue
    return state


@register.filter
def epoch_ms(moment: datetime | None) -> int:
    return int(moment.timestamp() * 1000) if moment is not None else 0
