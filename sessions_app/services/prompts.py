"""Every way a person starts, reruns or stops a turn: a new prompt, Regenerate, an edit of a
prompt, Resume and Start fresh, Stop and the retry banner's Cancel.

The ways to start share one open step (``_turn_open``): under the session's row lock, refuse
while a generation is active, do the entry's own preparation, admit the turn under the person's
caps, create the generation, write the prompt it answers and open it (the lifecycle queues it).
Every entry checks authorisation first and answers a foreign session exactly like an unknown one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from recovery import wording
from recovery.redact import redact_credentials
from sessions_app.effects import wording as effects_wording
from sessions_app.effects.services import RestoreUnavailable, fresh_restore
from sessions_app.errors import (
    GenerationActive,
    InvalidInput,
    RetryWaiting,
    SessionNotFound,
    StateConflict,
)
from sessions_app.models import Message, PromptGeneration, Session
from sessions_app.selectors import user_may_view
from sessions_app.services.caps import prompt_rate_precheck, turn_start_check
from sessions_app.services.lifecycle.generation import (
    generation_create,
    generation_end,
    generation_open,
    generation_stop_request,
    generation_supersede_waiting,
    retry_loops_cancel,
)
from sessions_app.services.lifecycle.queued import user_lock
from sessions_app.services.lifecycle.retry_wait import session_loops_end
from sessions_app.services.messages import message_create, message_update
from sessions_app.services.versions import session_tail_move
from sessions_app.text_rules import text_problem
from sessions_app.workspaces.git import GitFailed

State = PromptGeneration.State
Mode = PromptGeneration.Mode
# What a failure card offers: each is the mode of the generation it starts.
RECOVERY_ACTIONS = (Mode.RESUME, Mode.FRESH)


@dataclass(frozen=True, slots=True)
class _Prompt:
    """The user message a new generation answers."""

    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    context_starts: bool = False  # Start fresh: the agent is sent nothing before it


def prompt_text_clean(text: str) -> str:
    """The prompt as it will be stored, or InvalidInput(field="text").

    A credential pasted into a prompt (an API key, a bearer token, a password assignment) is
    replaced by the credential tier before anything is written: secrets never reach the database,
    the event log, the viewers or a provider in clear.
    """
    if not isinstance(text, str):
        raise InvalidInput("text", "must not be empty")
    problem = text_problem(text)
    if problem is not None:
        raise InvalidInput("text", problem)
    if len(text) > settings.KANDEV_MAX_PROMPT_CHARS:
        raise InvalidInput("text", f"must be at most {settings.KANDEV_MAX_PROMPT_CHARS} characters")
    return redact_credentials(text.strip())


def turn_admit(*, user: User) -> None:
    """A turn the person starts must pass their caps (services/caps.py). Taken after the session's
    row lock: the person's lock, held until commit, then the checks (CapReached)."""
    user_lock(user_id=user.pk)
    turn_start_check(user_id=user.pk)


def _turn_open(
    *,
    session: Session,
    user: User,
    mode: str,
    prepare: Callable[[Session], _Prompt | None],
    before_refusal: Callable[[Session], object] | None = None,
    sends_new_text: bool = True,
) -> PromptGeneration:
    """The open step every start shares. ``before_refusal`` runs first under the lock (Start
    fresh replaces a waiting retry there); ``prepare`` checks and labels rows under the lock and
    returns the prompt to write, if the new generation answers a new one. ``sends_new_text``: a
    waiting retry refuses with RetryWaiting, whose advice (Cancel it, your text is kept) fits
    an entry the person typed or chose for this turn; Resume and Start fresh are refused like
    any active generation."""
    if not user_may_view(user=user, session=session):
        raise SessionNotFound(session.pk)
    with transaction.atomic():
        locked = Session.objects.select_for_update(no_key=True).get(pk=session.pk)
        if before_refusal is not None:
            before_refusal(locked)
        _refuse_while_active(session=locked, retry_waiting=sends_new_text)
        prompt = prepare(locked)
        turn_admit(user=user)
        generation = generation_create(session=locked, mode=mode, requested_by=user)
        if prompt is not None:
            message = message_create(
                session=locked,
                generation=generation,
                role=Message.Role.USER,
                text=prompt.text,
                metadata={"author": user.get_username(), **prompt.metadata},
            )
            if prompt.context_starts:
                Session.objects.filter(pk=locked.pk).update(context_from=message)
        generation_open(session=locked, generation=generation)
    session.state = locked.state
    session.last_seq = locked.last_seq
    return generation


def _refuse_while_active(*, session: Session, retry_waiting: bool) -> None:
    """GenerationActive while a generation of the (locked) session is active; RetryWaiting (a
    GenerationActive) instead while one waits to retry, when ``retry_waiting``: the pending
    retry is the person's to drop."""
    active = (
        PromptGeneration.objects.filter(session=session, state__in=PromptGeneration.ACTIVE_STATES)
        .values_list("state", flat=True)
        .first()
    )
    if active == State.WAITING_RETRY and retry_waiting:
        raise RetryWaiting(session.pk)
    if active is not None:
        raise GenerationActive(session.pk)


def prompt_submit(*, session: Session, user: User, text: str) -> PromptGeneration:
    """Write the user's message and a new queued generation, then enqueue the run on commit.

    Raises InvalidInput for an empty or oversized prompt, GenerationActive while another
    generation of this session is queued or running, RetryWaiting (a GenerationActive) while
    one waits to retry, with Stop or Cancel to drop it, and CapReached when the person is at a
    cap (services/caps.py), which every other start checks too.
    """
    prompt_rate_precheck(user_id=user.pk)
    prompt = _Prompt(text=prompt_text_clean(text))
    return _turn_open(session=session, user=user, mode=Mode.PROMPT, prepare=lambda _: prompt)


def answer_regenerate(
    *, session: Session, user: User, message_id: int | None = None
) -> PromptGeneration:
    """Answer a prompt again in a new generation: the last prompt shown, or the shown prompt
    ``message_id``. The earlier answer (and whatever followed it) is kept as another version,
    switched to with "< 1 / 2 >", and is off the branch sent to the agent. Refused like a prompt
    while one is active."""

    def prepare(locked: Session) -> None:
        prompt = _shown_prompt(
            session=locked, field_name="action", problem=wording.NOTHING_TO_RERUN, pk=message_id
        )
        session_tail_move(session=locked, tail_id=prompt.pk)

    return _turn_open(session=session, user=user, mode=Mode.REGENERATE, prepare=prepare)


def prompt_edit(
    *, session: Session, user: User, text: str, message_id: int | None = None
) -> PromptGeneration:
    """Send an edited version of a shown prompt (the last one, or ``message_id``): the edit
    branches from where that prompt stood. The earlier prompt and all that followed it are kept
    as another version, off the branch sent to the agent. Refused like a prompt while one is
    active."""
    text = prompt_text_clean(text)

    def prepare(locked: Session) -> _Prompt:
        prompt = _shown_prompt(
            session=locked,
            field_name="text",
            problem="there is no message to edit yet",
            pk=message_id,
        )
        session_tail_move(session=locked, tail_id=prompt.parent_id)
        return _Prompt(text=text, metadata={"edit_of": prompt.pk})

    return _turn_open(session=session, user=user, mode=Mode.EDIT, prepare=prepare)


def session_recover(
    *, session: Session, user: User, action: str, restore: bool = False
) -> PromptGeneration:
    """Resume (re-run the failed turn on the committed history) or start fresh (re-send the last
    prompt in a new context). Partial output stays visible, marked incomplete, and is never fed
    back as if it were complete: the transcript builder leaves incomplete rows out. Either starts
    a turn, so the person's caps apply (CapReached, services/caps.py). ``restore`` (Start fresh
    only, after its confirmation step) first puts the agent's workspace back exactly as the last
    turn found it; without it the files are kept. A restore with no plan behind it (the turn's
    start unknown, the workspace gone) or one git cannot carry out is a StateConflict, and
    nothing starts: the person chose to put the files back, so they are never silently kept."""
    if not user_may_view(user=user, session=session):
        raise SessionNotFound(session.pk)
    if action not in RECOVERY_ACTIONS:
        raise InvalidInput("action", "must be one of: resume, fresh")
    mode = Mode(action)
    if restore and mode is not Mode.FRESH:
        # Well formed (the schema cannot tie one field to another), so a conflict, not a 422.
        raise StateConflict("restore", effects_wording.RESTORE_ONLY_WITH_FRESH)

    def supersede(locked: Session) -> None:
        if mode is Mode.FRESH:
            generation_supersede_waiting(session=locked)

    def prepare(locked: Session) -> _Prompt | None:
        prompt = _last_prompt(session=locked, field_name="action", problem=wording.NOTHING_TO_RERUN)
        # A loop left live by an earlier run must never fire into the new turn.
        session_loops_end(session_id=locked.pk)
        if mode is Mode.RESUME:
            _partials_supersede(session=locked, after=prompt)
            return None
        if restore:
            # Under the session lock, after the active-run refusal: no agent is writing now.
            try:
                fresh_restore(session_id=locked.pk)
            except RestoreUnavailable:
                raise StateConflict("restore", effects_wording.NO_RESTORE_PLAN) from None
            except GitFailed:
                raise StateConflict("restore", effects_wording.RESTORE_FAILED) from None
        return _Prompt(text=prompt.full_text, metadata={"fresh_start": True}, context_starts=True)

    return _turn_open(
        session=session,
        user=user,
        mode=mode,
        prepare=prepare,
        before_refusal=supersede,
        sends_new_text=False,
    )


def _last_prompt(*, session: Session, field_name: str, problem: str) -> Message:
    return _shown_prompt(session=session, field_name=field_name, problem=problem)


def _shown_prompt(
    *, session: Session, field_name: str, problem: str, pk: int | None = None
) -> Message:
    """A prompt on the branch shown: the last one, or ``pk`` (InvalidInput when that is not a
    shown prompt of this session)."""
    # off_path is only ever written as true; rows on the branch shown carry no such key.
    prompts = Message.objects.filter(
        session=session, role=Message.Role.USER, metadata__off_path__isnull=True
    )
    if pk is not None:
        prompt = prompts.filter(pk=pk).first()
        if prompt is None:
            raise InvalidInput("message", "is not a prompt shown in this session")
        return prompt
    prompt = prompts.order_by("-id").first()
    if prompt is None:
        raise StateConflict(field_name, problem)
    return prompt


def _rows_replace(*, rows: Iterable[Message], reason: Message.Replaced) -> None:
    """Label rows as replaced (``metadata["replaced"]``): each keeps its place in the transcript,
    closed behind a disclosure saying why (or, for Resume, flagged), is left out of what the agent
    is sent, and every viewer sees the change through its ``message.updated`` event."""
    for row in rows:
        if not row.metadata.get("replaced"):
            message_update(message=row, metadata={**row.metadata, "replaced": str(reason)})


def _partials_supersede(*, session: Session, after: Message) -> None:
    """The incomplete rows a Resume runs again say so ("Superseded: Resume ran this turn again
    below"), so a partial answer and the full one never stand side by side unexplained."""
    _rows_replace(
        rows=Message.objects.filter(
            session=session,
            id__gt=after.pk,
            metadata__off_path__isnull=True,
            incomplete=True,
            role__in=(Message.Role.ASSISTANT, Message.Role.THINKING),
        ).select_related("session", "generation"),
        reason=Message.Replaced.RESUME,
    )


def session_stop(*, session: Session, user: User) -> PromptGeneration | None:
    """Ask the active generation to stop. Returns it, or None when nothing was running (pressing
    Stop twice is harmless). A queued generation no worker has claimed is stopped here; a running
    one is flagged and its worker ends it within about a flush interval, keeping partial text.
    During a retry (waiting, or its attempt running) Stop is the banner's Cancel: the session
    needs attention with Resume and Start fresh, never idle with an unanswered prompt."""
    if not user_may_view(user=user, session=session):
        raise SessionNotFound(session.pk)
    with transaction.atomic():
        generation = (
            PromptGeneration.objects.select_for_update(no_key=True)
            .filter(session=session, state__in=PromptGeneration.ACTIVE_STATES)
            .order_by("-number")
            .first()
        )
        if generation is None:
            return None
        if retry_loops_cancel(session_id=session.pk):
            generation.refresh_from_db()
            return generation
        generation_stop_request(generation_id=generation.pk)
        generation.stop_requested = True
        # No worker holds a queued or waiting generation, so nobody else would notice the flag.
        if generation.state in (State.QUEUED, State.WAITING_RETRY):
            generation_end(generation=generation, state=State.STOPPED)
    return generation


def retry_cancel(*, session_id: int, user: User) -> list[str]:
    """Cancel the session's retry loop and retire its notices (even when the loop already ended):
    the same action as Stop while a retry waits (``retry_loops_cancel``).

    Returns the recovery actions now offered: Resume and Start fresh when a loop was active, else
    nothing. A foreign or unknown session returns exactly what a session without a loop returns,
    so the answer never reveals whether retry state exists.
    """
    session = Session.objects.filter(pk=session_id).first()
    if session is None or not user_may_view(user=user, session=session):
        return []
    with transaction.atomic():
        Session.objects.select_for_update(no_key=True).get(pk=session.pk)
        if not retry_loops_cancel(session_id=session.pk):
            return []
    return [str(action) for action in RECOVERY_ACTIONS]
