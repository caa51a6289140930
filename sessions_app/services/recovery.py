"""What a person can do about a failed or retrying turn: cancel the retry, resume, start fresh,
or switch the session's target. Every entry checks authorisation first and answers a foreign
session exactly like an unknown one."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from recovery import wording
from sessions_app.errors import GenerationActive, InvalidInput, SessionNotFound, StateConflict
from sessions_app.ladder.models import RetryLoop
from sessions_app.models import Message, PromptGeneration, ProviderTarget, Session
from sessions_app.selectors import user_may_view
from sessions_app.services.board import session_state_set
from sessions_app.services.generations import (
    generation_begin,
    generation_create,
    generation_end,
    generation_stop_request,
    generation_supersede_waiting,
)
from sessions_app.services.loops import loops_disarm
from sessions_app.services.messages import message_create

RECOVERY_ACTIONS = ("resume", "fresh")


def retry_cancel(*, session_id: int, user: AbstractBaseUser) -> list[str]:
    """Cancel the session's retry loop and retire its notices (even when the loop already ended).

    Returns the recovery actions now offered: Resume and Start fresh when a loop was active, else
    nothing. A foreign or unknown session returns exactly what a session without a loop returns,
    so the answer never reveals whether retry state exists.
    """
    session = Session.objects.filter(pk=session_id).first()
    if session is None or not user_may_view(user=user, session=session):
        return []
    with transaction.atomic():
        Session.objects.select_for_update().get(pk=session.pk)
        cancelled = loops_disarm(session_id=session.pk, state=RetryLoop.State.CANCELLED)
        if not cancelled:
            return []
        for loop in cancelled:
            # A worker may be mid-attempt: the flag trips its stop watcher within a poll.
            generation_stop_request(generation_id=loop.generation_id)
            generation = PromptGeneration.objects.select_related("session").get(
                pk=loop.generation_id
            )
            generation_end(
                generation=generation,
                state=PromptGeneration.State.FAILED,
                error_code="cancelled",
                error_message=wording.RETRY_CANCELLED,
            )
    return list(RECOVERY_ACTIONS)


def session_recover(*, session: Session, user: AbstractBaseUser, action: str) -> PromptGeneration:
    """Resume (re-run the failed turn on the committed history) or start fresh (re-send the last
    prompt in a new context). Partial output stays visible, marked incomplete, and is never fed
    back as if it were complete: the transcript builder leaves incomplete rows out."""
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
            raise StateConflict("action", "there is no prompt to re-run yet")
        loops_disarm(session_id=locked.pk)
        mode = PromptGeneration.Mode.RESUME if action == "resume" else PromptGeneration.Mode.FRESH
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


def session_target_set(
    *, session: Session, user: AbstractBaseUser, target: ProviderTarget
) -> Session:
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
    session.target = target
    return locked
