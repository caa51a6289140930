"""The session's projected state, and its task's status: the lifecycle writes them, nobody else.

A session shows what its latest generation is doing: when a generation moves, ``generation.py``
moves the session from ``SESSION_OF[source]`` to ``SESSION_OF[destination]``, and every such move
must be one ``SESSION_MOVES`` declares (ForbiddenTransition otherwise, rolling back the
generation move that asked for it). The generation's own conditional lock is what decides a
race, so the session follows it unconditionally: a projection that had drifted is healed, never
left stuck. Two states are re-announced in place, each a declared refresh rather than a blind
write: a queued session's place in line (``session_queue_refresh``) and a needs-attention card
after a target switch (``session_card_refresh``). Every write records a ``session.updated``
event in the same transaction and projects the task's status from all its sessions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from recovery import wording
from sessions_app import event_types as event_names
from sessions_app.effects.services import fresh_restore_offer
from sessions_app.models import PromptGeneration, Session, Task
from sessions_app.selectors import session_switch_targets
from sessions_app.services.event_log import event_append

SessionState = Session.State

SESSION_MOVES: Mapping[str, frozenset[str]] = {
    SessionState.IDLE: frozenset({SessionState.QUEUED}),
    # Claimed by a worker; stopped before one took it.
    SessionState.QUEUED: frozenset({SessionState.RUNNING, SessionState.IDLE}),
    SessionState.RUNNING: frozenset(
        {
            SessionState.NEEDS_APPROVAL,
            SessionState.WAITING_RETRY,
            SessionState.IDLE,
            SessionState.NEEDS_ATTENTION,
        }
    ),
    # Decided (the turn goes on); stopped; the worker was lost.
    SessionState.NEEDS_APPROVAL: frozenset(
        {SessionState.RUNNING, SessionState.IDLE, SessionState.NEEDS_ATTENTION}
    ),
    # The attempt starts; stopped or replaced; cancelled.
    SessionState.WAITING_RETRY: frozenset(
        {SessionState.RUNNING, SessionState.IDLE, SessionState.NEEDS_ATTENTION}
    ),
    # Resume, Start fresh, Regenerate, an edit or a new prompt queues the next turn.
    SessionState.NEEDS_ATTENTION: frozenset({SessionState.QUEUED}),
}
# States announced again without moving, because what rides on them changed.
SESSION_REFRESHES = frozenset({SessionState.QUEUED, SessionState.NEEDS_ATTENTION})
# The task shows its most urgent session: any needing attention, else any at work.
_AT_WORK = frozenset(
    {
        SessionState.QUEUED,
        SessionState.RUNNING,
        SessionState.NEEDS_APPROVAL,
        SessionState.WAITING_RETRY,
    }
)


class ForbiddenTransition(Exception):
    """A programming error: code asked for a move the lifecycle does not have."""

    def __init__(self, what: str, source: str | None, target: str) -> None:
        super().__init__(f"{what} cannot go from {source} to {target}")


def session_move_allowed(source: str, target: str) -> bool:
    """Whether the session may go from ``source`` to ``target``: a declared move or refresh."""
    if source == target:
        return target in SESSION_REFRESHES
    return target in SESSION_MOVES.get(source, frozenset())


def _session_move(
    *,
    session: Session,
    source: str,
    to: str,
    recovery_actions: Sequence[str] = (),
    explanation: str = "",
    queue: dict[str, Any] | None = None,
) -> None:
    """Move the session from ``source`` (what its generation's last state showed) to ``to``;
    ForbiddenTransition for a move ``SESSION_MOVES`` lacks. ``explanation`` (already redacted) is
    why it needs attention and ``queue`` its place in line; both ride on the event, so no viewer
    reads again to show them."""
    _session_write(
        session=session,
        source=source,
        to=to,
        payload=_payload(to, recovery_actions, explanation, queue),
    )


def session_queue_refresh(*, generation: PromptGeneration, ahead: int, queue: dict) -> None:
    """Tell the viewers of a queued generation's session its place in line, now ``ahead``."""
    PromptGeneration.objects.filter(pk=generation.pk, state=PromptGeneration.State.QUEUED).update(
        queue_ahead=ahead
    )
    generation.queue_ahead = ahead
    _session_write(
        session=generation.session,
        source=SessionState.QUEUED,
        to=SessionState.QUEUED,
        payload=_payload(SessionState.QUEUED, (), "", queue),
    )


def session_card_refresh(*, session: Session) -> None:
    """A session needing attention says so again, so every viewer's card shows what changed
    (the target "Try another target" and Resume now use). Nothing when it does not need it."""
    if session.state != SessionState.NEEDS_ATTENTION:
        return
    last = PromptGeneration.objects.filter(session=session).order_by("-number").first()
    actions = wording.recovery_actions(last.error_code if last else "")
    explanation = last.error_message if last else ""
    _session_write(
        session=session,
        source=SessionState.NEEDS_ATTENTION,
        to=SessionState.NEEDS_ATTENTION,
        payload=_payload(SessionState.NEEDS_ATTENTION, actions, explanation, None),
    )


def _session_write(*, session: Session, source: str, to: str, payload: dict[str, Any]) -> None:
    if not session_move_allowed(source, to):
        raise ForbiddenTransition("a session", source, to)
    with transaction.atomic():
        now = timezone.now()
        Session.objects.filter(pk=session.pk).update(state=to, updated_at=now)
        session.state = to
        siblings = Session.objects.filter(task_id=session.task_id)
        states = set(siblings.values_list("state", flat=True))
        Task.objects.filter(pk=session.task_id).exclude(status=Task.Status.DONE).update(
            status=task_status_of(states), updated_at=now
        )
        if to == SessionState.NEEDS_ATTENTION:
            # The card's "Try another target" choices ride along, like the explanation.
            payload["switch_targets"] = session_switch_targets(session=session)
            # Whether Start fresh may put the workspace back rides along too, measured once here
            # rather than by every viewer's socket.
            if "fresh" in payload.get("recovery_actions", ()):
                offer = fresh_restore_offer(session_id=session.pk).as_payload()
                if offer is not None:
                    payload["fresh_restore"] = offer
        event_append(session=session, type=event_names.SESSION_UPDATED, payload=payload)


def task_status_of(session_states: set[str]) -> str:
    """A task needs attention when any session does, is in progress while any works, else open."""
    if SessionState.NEEDS_ATTENTION in session_states:
        return Task.Status.NEEDS_ATTENTION
    if session_states & _AT_WORK:
        return Task.Status.IN_PROGRESS
    return Task.Status.OPEN


def _payload(
    state: str, recovery_actions: Sequence[str], explanation: str, queue: dict | None
) -> dict[str, Any]:
    payload: dict[str, Any] = {"state": state, "recovery_actions": list(recovery_actions)}
    if explanation:
        payload["explanation"] = explanation
    if queue is not None:
        payload["queue"] = queue
    return payload
