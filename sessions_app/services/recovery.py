"""What a person can do about a failed or retrying turn: cancel the retry, resume, start fresh,
or switch the session's target. Every entry checks authorisation first and answers a foreign
session exactly like an unknown one."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from recovery import wording
from sessions_app.errors import GenerationActive, InvalidInput, SessionNotFound, StateConflict
from sessions_app.models import Message, PromptGeneration, ProviderTarget, Session
from sessions_app.selectors import session_switch_targets, user_may_view
from sessions_app.services.board import session_state_set
from sessions_app.services.generations import (
    generation_begin,
    generation_create,
    generation_supersede_waiting,
    retry_loops_cancel,
    turn_admit,
)
from sessions_app.services.loops import loops_disarm
from sessions_app.services.messages import message_create, message_update

RECOVERY_ACTIONS = ("resume", "fresh")


def retry_cancel(*, session_id: int, user: User) -> list[str]:
    """Cancel the session's retry loop and retire its notices (even when the loop already ended):
    the same action as Stop while a retry waits (``generations.retry_loops_cancel``).

    Returns the recovery actions now offered: Resume and Start fresh when a loop was active, else
    nothing. A foreign or unknown session returns exactly what a session without a loop returns,
    so the answer never reveals whether retry state exists.
    """
    session = Session.objects.filter(pk=session_id).first()
    if session is None or not user_may_view(user=user, session=session):
        return []
    with transaction.atomic():
        Session.objects.select_for_update().get(pk=session.pk)
        if not retry_loops_cancel(session_id=session.pk):
            return []
    return list(RECOVERY_ACTIONS)


def session_recover(*, session: Session, user: User, action: str) -> PromptGeneration:
    """Resume (re-run the failed turn on the committed history) or start fresh (re-send the last
    prompt in a new context). Partial output stays visible, marked incomplete, and is never fed
    back as if it were complete: the transcript builder leaves incomplete rows out. Either starts
    a turn, so the person's caps apply (CapReached, services/caps.py)."""
    if not user_may_view(user=user, session=session):
        raise SessionNotFound(session.pk)
    if action not in RECOVERY_ACTIONS:
        raise InvalidInput("action", "must be one of: resume, fresh")
    with transaction.atomic():
        locked = Session.objects.select_for_update().get(pk=session.pk)
        if action == "fresh":
            generation_supersede_waiting(session=locked)
        if PromptGeneration.objects.filter(
            session=locked, state__in=PromptGeneration.ACTIVE_STATES
        ).exists():
            raise GenerationActive(session.pk)
        last_prompt = (
            Message.objects.filter(session=locked, role=Message.Role.USER).order_by("-id").first()
        )
        if last_prompt is None:
            raise StateConflict("action", wording.NOTHING_TO_RERUN)
        turn_admit(user=user)
        loops_disarm(session_id=locked.pk)
        mode = PromptGeneration.Mode.RESUME if action == "resume" else PromptGeneration.Mode.FRESH
        if action == "resume":
            _partials_supersede(session=locked, after=last_prompt)
        generation = generation_create(session=locked, mode=mode, requested_by=user)
        if action == "fresh":
            resent = message_create(
                session=locked,
                generation=generation,
                role=Message.Role.USER,
                text=last_prompt.full_text,
                metadata={"author": user.get_username(), "fresh_start": True},
            )
            Session.objects.filter(pk=locked.pk).update(context_from=resent)
        generation_begin(session=locked, generation=generation)
    session.state = locked.state
    return generation


def _partials_supersede(*, session: Session, after: Message) -> None:
    """The incomplete rows a Resume runs again say so ("Superseded: Resume ran this turn again
    below"), so a partial answer and the full one never stand side by side unexplained."""
    partials = Message.objects.filter(
        session=session,
        id__gt=after.pk,
        incomplete=True,
        role__in=(Message.Role.ASSISTANT, Message.Role.THINKING),
    ).select_related("session", "generation")
    for row in partials:
        if not row.metadata.get("replaced"):
            message_update(message=row, metadata={**row.metadata, "replaced": "resume"})


def session_target_set(*, session: Session, user: User, target: ProviderTarget) -> Session:
    """Switch the session to another target. A retry waiting on the old target is disarmed."""
    if not user_may_view(user=user, session=session):
        raise SessionNotFound(session.pk)
    with transaction.atomic():
        locked = Session.objects.select_for_update().get(pk=session.pk)
        superseded = generation_supersede_waiting(session=locked)
        Session.objects.filter(pk=locked.pk).update(target=target)
        locked.target = target
        if superseded is not None:
            session_state_set(session=locked, state=Session.State.IDLE)
        elif locked.state == Session.State.NEEDS_ATTENTION:
            # Every viewer's card names the new target, and Resume now runs on it.
            last = PromptGeneration.objects.filter(session=locked).order_by("-number").first()
            session_state_set(
                session=locked,
                state=Session.State.NEEDS_ATTENTION,
                recovery_actions=wording.recovery_actions(last.error_code if last else ""),
                explanation=last.error_message if last else "",
            )
    session.target = target
    return locked


def session_target_switch(*, session: Session, user: User, target_id: object) -> Session:
    """The failure card's "Try another target": ``target_id`` as posted, checked against the
    targets the card offers (every other target), then ``session_target_set``."""
    if not user_may_view(user=user, session=session):
        raise SessionNotFound(session.pk)
    try:
        wanted = int(str(target_id))
    except ValueError:
        raise InvalidInput("target", "choose a target from the list") from None
    offered = {t["id"] for t in session_switch_targets(session=session)}
    if wanted not in offered:
        raise InvalidInput("target", "choose another target from the list")
    target = ProviderTarget.objects.get(pk=wanted)
    return session_target_set(session=session, user=user, target=target)
