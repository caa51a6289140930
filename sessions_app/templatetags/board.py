"""The board's badges: a session's live state in words (with "Queued" while its prompt waits for
a worker, "Needs approval" while its agent waits for a person, counted on the column too) and the
countdown of a session waiting to retry, rendered like the banner's."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django import template

from sessions_app.board_selectors import board_session_state
from sessions_app.models import PromptGeneration, Session, Task

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


def _waiting_for_a_person(task: Task) -> int:
    # task.sessions is board_tasks' prefetch: no query per card.
    return sum(
        1 for session in task.sessions.all() if session.state == Session.State.NEEDS_APPROVAL
    )


@register.filter
def task_needs_approval(task: Task) -> bool:
    """Whether one of the task's sessions waits for a person to answer its agent."""
    return _waiting_for_a_person(task) > 0


@register.filter
def approvals_waiting(tasks: Iterable[Task]) -> int:
    """How many sessions of a column's tasks wait for a person (its heading says so)."""
    return sum(_waiting_for_a_person(task) for task in tasks)
