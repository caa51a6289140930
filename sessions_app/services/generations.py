"""Prompt generations: the one owner of their state machine.

Every write of ``PromptGeneration.state`` in the project goes through ``_move``, which refuses a
transition that ``TRANSITIONS`` does not list and applies an allowed one as a conditional UPDATE,
so two processes racing on one generation can never both win. Each move is announced in the event
log, and the session's state follows the generation's (queued with its place in line, running,
waiting to retry, idle, needs attention).

    queued -> running | stopped
    running -> waiting_retry | succeeded | failed | stopped
    waiting_retry -> running | superseded | stopped | failed

Besides the moves, the services that start generations live here: a new prompt, Regenerate and
an edit of the last prompt (Resume and Start fresh are in services/recovery.py).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from recovery import wording
from recovery.redact import redact_credentials
from sessions_app import events as event_names
from sessions_app.enqueue import generation_enqueue
from sessions_app.errors import (
    GenerationActive,
    InvalidInput,
    RetryWaiting,
    SessionNotFound,
    StateConflict,
)
from sessions_app.ladder.models import RetryLoop
from sessions_app.models import Message, PromptGeneration, Session
from sessions_app.selectors import queue_ahead, queue_dict, user_may_view
from sessions_app.services.board import session_state_set
from sessions_app.services.caps import prompt_rate_precheck, turn_start_check
from sessions_app.services.events import event_append
from sessions_app.services.loops import loop_finish, loops_disarm
from sessions_app.services.messages import message_create, message_finish, message_update
from sessions_app.services.queue import queue_hold, queue_release_next, user_at_limit, user_lock
from sessions_app.text_rules import storable_text, text_problem

State = PromptGeneration.State

TRANSITIONS: Mapping[str, frozenset[str]] = {
    State.QUEUED: frozenset({State.RUNNING, State.STOPPED}),
    State.RUNNING: frozenset({State.WAITING_RETRY, State.SUCCEEDED, State.FAILED, State.STOPPED}),
    State.WAITING_RETRY: frozenset({State.RUNNING, State.SUPERSEDED, State.STOPPED, State.FAILED}),
}
ENDED_STATES = (State.SUCCEEDED, State.FAILED, State.STOPPED, State.SUPERSEDED)


class ForbiddenTransition(Exception):
    """A programming error: code asked for a move the state machine does not have."""

    def __init__(self, source: str, target: str) -> None:
        super().__init__(f"a generation cannot go from {source} to {target}")


def sources_of(target: str) -> tuple[str, ...]:
    """Every state a generation may leave for ``target``."""
    return tuple(source for source, targets in TRANSITIONS.items() if target in targets)


def _move(
    generation: PromptGeneration,
    *,
    to: str,
    sources: Iterable[str] | None = None,
    **fields: object,
) -> bool:
    """Move ``generation`` to ``to`` if it is in one of ``sources`` (default: every state allowed
    to reach ``to``), writing ``fields`` with it and announcing the move. False when it was not
    there (a race someone else won); ForbiddenTransition for a move the machine does not have."""
    sources = tuple(sources) if sources is not None else sources_of(to)
    for source in sources:
        if to not in TRANSITIONS.get(source, frozenset()):
            raise ForbiddenTransition(source, to)
    moved = PromptGeneration.objects.filter(pk=generation.pk, state__in=sources).update(
        state=to, **fields
    )
    if moved != 1:
        return False
    generation.state = to
    for name, value in fields.items():
        setattr(generation, name, value)
    _generation_event(generation)
    return True


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


def prompt_submit(*, session: Session, user: User, text: str) -> PromptGeneration:
    """Write the user's message and a new queued generation, then enqueue the run on commit.

    Raises InvalidInput for an empty or oversized prompt, GenerationActive while another
    generation of this session is queued or running, RetryWaiting (a GenerationActive) while
    one waits to retry: the pending retry is the person's to drop, with Stop or Cancel, and
    CapReached when the person is at a cap (services/caps.py), which Regenerate and an edit
    check too.
    """
    prompt_rate_precheck(user_id=user.pk)
    text = prompt_text_clean(text)
    if not user_may_view(user=user, session=session):
        raise SessionNotFound(session.pk)
    with transaction.atomic():
        locked = Session.objects.select_for_update().get(pk=session.pk)
        _refuse_while_active(session=locked)
        turn_admit(user=user)
        generation = _generation_create(
            session=locked, mode=PromptGeneration.Mode.PROMPT, requested_by=user
        )
        message_create(
            session=locked,
            generation=generation,
            role=Message.Role.USER,
            text=text,
            metadata={"author": user.get_username()},
        )
        _generation_start(session=locked, generation=generation)
    session.state = locked.state
    session.last_seq = locked.last_seq
    return generation


def turn_admit(*, user: User) -> None:
    """A turn the person starts must pass their caps (services/caps.py). Taken after the session's
    row lock: the person's lock, held until commit, then the checks (CapReached)."""
    user_lock(user_id=user.pk)
    turn_start_check(user_id=user.pk)


def _refuse_while_active(*, session: Session) -> None:
    """GenerationActive while a generation of the (locked) session is queued or running,
    RetryWaiting while one waits to retry."""
    active = (
        PromptGeneration.objects.filter(session=session, state__in=PromptGeneration.ACTIVE_STATES)
        .values_list("state", flat=True)
        .first()
    )
    if active == State.WAITING_RETRY:
        raise RetryWaiting(session.pk)
    if active is not None:
        raise GenerationActive(session.pk)


def _last_prompt(*, session: Session) -> Message | None:
    return Message.objects.filter(session=session, role=Message.Role.USER).order_by("-id").first()


def _rows_replace(*, rows: Iterable[Message], reason: str) -> None:
    """Label rows as replaced (``metadata["replaced"]``): each keeps its place in the transcript,
    closed behind a disclosure saying why (or, for Resume, flagged), is left out of what the agent
    is sent, and every viewer sees the change through its ``message.updated`` event."""
    for row in rows:
        if not row.metadata.get("replaced"):
            message_update(message=row, metadata={**row.metadata, "replaced": reason})


def answer_regenerate(*, session: Session, user: User) -> PromptGeneration:
    """Answer the last prompt again in a new generation. The earlier answer (every row after the
    prompt) is kept, labelled "replaced by Regenerate" and never sent to the agent again, so the
    new answer is the only one shown open. Refused like a prompt while one is active."""
    if not user_may_view(user=user, session=session):
        raise SessionNotFound(session.pk)
    with transaction.atomic():
        locked = Session.objects.select_for_update().get(pk=session.pk)
        _refuse_while_active(session=locked)
        prompt = _last_prompt(session=locked)
        if prompt is None:
            raise StateConflict("action", wording.NOTHING_TO_RERUN)
        turn_admit(user=user)
        _rows_replace(
            rows=Message.objects.filter(session=locked, id__gt=prompt.pk).select_related(
                "session", "generation"
            ),
            reason="regenerate",
        )
        generation = _generation_create(
            session=locked, mode=PromptGeneration.Mode.REGENERATE, requested_by=user
        )
        _generation_start(session=locked, generation=generation)
    session.state = locked.state
    return generation


def prompt_edit(*, session: Session, user: User, text: str) -> PromptGeneration:
    """Send an edited version of the last prompt. The earlier prompt and its answer are kept,
    labelled "replaced by your edit" and never sent to the agent again; the edited prompt is a
    new message answered by a new generation. Refused like a prompt while one is active."""
    text = prompt_text_clean(text)
    if not user_may_view(user=user, session=session):
        raise SessionNotFound(session.pk)
    with transaction.atomic():
        locked = Session.objects.select_for_update().get(pk=session.pk)
        _refuse_while_active(session=locked)
        prompt = _last_prompt(session=locked)
        if prompt is None:
            raise StateConflict("text", "there is no message to edit yet")
        turn_admit(user=user)
        _rows_replace(
            rows=Message.objects.filter(session=locked, id__gte=prompt.pk).select_related(
                "session", "generation"
            ),
            reason="edit",
        )
        generation = _generation_create(
            session=locked, mode=PromptGeneration.Mode.EDIT, requested_by=user
        )
        message_create(
            session=locked,
            generation=generation,
            role=Message.Role.USER,
            text=text,
            metadata={"author": user.get_username(), "edit_of": prompt.pk},
        )
        _generation_start(session=locked, generation=generation)
    session.state = locked.state
    session.last_seq = locked.last_seq
    return generation


def generation_supersede_waiting(*, session: Session) -> PromptGeneration | None:
    """Start fresh or a target change replaces a generation that is only waiting to retry: its
    loop is disarmed and its banner retired, so the old retry can never fire."""
    with transaction.atomic():
        waiting = (
            PromptGeneration.objects.select_for_update()
            .filter(session=session, state=State.WAITING_RETRY)
            .first()
        )
        if waiting is None:
            return None
        _move(
            waiting, to=State.SUPERSEDED, sources=(State.WAITING_RETRY,), finished_at=timezone.now()
        )
        loops_disarm(session_id=session.pk)
    return waiting


def generation_create(
    *, session: Session, mode: str, requested_by: User | None = None
) -> PromptGeneration:
    """The session's next generation, queued. The caller holds the session row lock, writes the
    user message it answers (if any), then calls ``generation_begin``."""
    return _generation_create(session=session, mode=mode, requested_by=requested_by)


def generation_begin(*, session: Session, generation: PromptGeneration) -> None:
    """Announce a created generation, mark the session running and enqueue the run on commit."""
    _generation_start(session=session, generation=generation)


def _generation_create(
    *, session: Session, mode: str, requested_by: User | None
) -> PromptGeneration:
    last = PromptGeneration.objects.filter(session=session).aggregate(n=Max("number"))["n"]
    return PromptGeneration.objects.create(
        session=session,
        number=(last or 0) + 1,
        mode=mode,
        requested_by=requested_by if requested_by is not None and requested_by.pk else None,
    )


def _generation_start(*, session: Session, generation: PromptGeneration) -> None:
    """The generation is queued, and its session says so with its place in line, until a worker
    claims it (services/queue.py)."""
    _generation_event(generation)
    generation.session = session
    ahead = queue_ahead(generation=generation)
    PromptGeneration.objects.filter(pk=generation.pk).update(queue_ahead=ahead)
    generation.queue_ahead = ahead
    session_state_set(
        session=session, state=Session.State.QUEUED, queue=queue_dict(generation, ahead)
    )
    generation_id = generation.pk
    # robust: the prompt is committed either way; a broker hiccup must not turn that into a
    # server error. A queued generation that never got its task is re-enqueued by a sweeper.
    transaction.on_commit(lambda: generation_enqueue(generation_id=generation_id), robust=True)


def generation_claim(*, generation_id: int) -> PromptGeneration | None:
    """Take a queued generation for this worker, and its session is running. None when there is
    nothing to run: a duplicate delivery (the conditional UPDATE lets exactly one claimant
    through), or a person who already has KANDEV_USER_MAX_RUNNING generations running, whose
    prompt is then held in line until one of theirs stops running (services/queue.py)."""
    generation = PromptGeneration.objects.select_related("session", "session__target").filter(
        pk=generation_id
    ).first()
    if generation is None or generation.state != State.QUEUED:
        return None
    with transaction.atomic():
        user_lock(user_id=generation.requested_by_id)
        if user_at_limit(user_id=generation.requested_by_id):
            queue_hold(generation=generation, reason=PromptGeneration.QueueReason.USER_LIMIT)
            return None
        now = timezone.now()
        if not _move(
            generation, to=State.RUNNING, sources=(State.QUEUED,), claimed_at=now, heartbeat_at=now
        ):
            return None
        session_state_set(session=generation.session, state=Session.State.RUNNING)
    return generation


def generation_await_retry(*, generation: PromptGeneration) -> bool:
    """The ladder scheduled a retry of this running generation: it waits, and so does its
    session (the banner shows why)."""
    with transaction.atomic():
        if not _move(generation, to=State.WAITING_RETRY, sources=(State.RUNNING,)):
            return False
        session_state_set(session=generation.session, state=Session.State.WAITING_RETRY)
        # Waiting holds no worker: the person's next prompt in line may run meanwhile.
        queue_release_next(user_id=generation.requested_by_id)
    return True


def generation_retry_claim(*, generation: PromptGeneration) -> bool:
    """A scheduled retry attempt starts: the waiting generation runs again."""
    with transaction.atomic():
        if not _move(
            generation,
            to=State.RUNNING,
            sources=(State.WAITING_RETRY,),
            heartbeat_at=timezone.now(),
        ):
            return False
        session_state_set(session=generation.session, state=Session.State.RUNNING)
    return True


def generation_heartbeat(*, generation_ids: Iterable[int]) -> None:
    """The worker running these generations is alive (one UPDATE for all of them)."""
    PromptGeneration.objects.filter(pk__in=list(generation_ids), state=State.RUNNING).update(
        heartbeat_at=timezone.now()
    )


def generations_reap_lost(*, silent_for_s: float) -> list[int]:
    """End every running generation whose worker has been silent for ``silent_for_s`` (killed
    mid-run: acks_late redelivers its task, but the claim rightly refuses a second run). Partial
    output is closed as incomplete and the session offers Resume and Start fresh. Returns ids."""
    cutoff = timezone.now() - dt.timedelta(seconds=silent_for_s)
    lost = PromptGeneration.objects.select_related("session").filter(
        state=State.RUNNING, heartbeat_at__lt=cutoff
    )
    reaped = []
    for generation in lost:
        with transaction.atomic():
            for message in Message.objects.filter(
                generation=generation, status=Message.Status.STREAMING
            ).select_related("session"):
                message_finish(message=message, status=Message.Status.ERROR, incomplete=True)
            if generation_end(
                generation=generation,
                state=State.FAILED,
                error_code="worker_lost",
                error_message=wording.WORKER_LOST,
            ):
                reaped.append(generation.pk)
    return reaped


def generations_stop_requested(*, generation_ids: Iterable[int]) -> list[int]:
    """Which of these generations someone asked to stop (one query for all of them)."""
    return list(
        PromptGeneration.objects.filter(
            pk__in=list(generation_ids), stop_requested=True
        ).values_list("pk", flat=True)
    )


def generation_stop_request(*, generation_id: int) -> None:
    """Flag a generation to stop: the worker running it notices within a poll interval."""
    PromptGeneration.objects.filter(pk=generation_id).update(stop_requested=True)


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
            PromptGeneration.objects.select_for_update()
            .filter(session=session, state__in=PromptGeneration.ACTIVE_STATES)
            .order_by("-number")
            .first()
        )
        if generation is None:
            return None
        # While a retry waits (or its attempt runs), Stop is the banner's Cancel: one meaning.
        if retry_loops_cancel(session_id=session.pk):
            generation.refresh_from_db()
            return generation
        generation_stop_request(generation_id=generation.pk)
        generation.stop_requested = True
        # No worker holds a queued or waiting generation, so nobody else would notice the flag.
        if generation.state in (State.QUEUED, State.WAITING_RETRY):
            generation_end(generation=generation, state=State.STOPPED)
    return generation


def retry_loops_cancel(*, session_id: int) -> list[RetryLoop]:
    """Cancel the session's live retry loops and retire their banner: what Stop and the banner's
    Cancel both do during a retry. Each loop's generation ends failed ("cancelled"), so every
    viewer's card offers Resume and Start fresh; a worker mid-attempt notices the stop flag
    within a poll, and its late end is refused by the state machine. Returns the loops."""
    with transaction.atomic():
        cancelled = loops_disarm(session_id=session_id, state=RetryLoop.State.CANCELLED)
        for loop in cancelled:
            generation_stop_request(generation_id=loop.generation_id)
            generation = PromptGeneration.objects.select_related("session").get(
                pk=loop.generation_id
            )
            generation_end(
                generation=generation,
                state=State.FAILED,
                error_code="cancelled",
                error_message=wording.RETRY_CANCELLED,
            )
    return cancelled


def generation_end(
    *, generation: PromptGeneration, state: str, error_code: str = "", error_message: str = ""
) -> bool:
    """Finish an active generation as succeeded, failed or stopped and settle the session.

    Returns False (and changes nothing) when the generation had already ended, e.g. a stop that
    raced a success. ``error_message`` must already be redacted.
    """
    if state not in (State.SUCCEEDED, State.FAILED, State.STOPPED):
        raise ValueError(f"{state!r} does not end a generation")
    # It may quote a provider's error body or an agent's stderr tail, which may hold NUL.
    error_message = storable_text(error_message)
    with transaction.atomic():
        was_running = PromptGeneration.objects.filter(pk=generation.pk, state=State.RUNNING).exists()
        if not _move(
            generation,
            to=state,
            error_code=error_code,
            error_message=error_message,
            finished_at=timezone.now(),
        ):
            return False
        if was_running:
            queue_release_next(user_id=generation.requested_by_id)
        if state == State.SUCCEEDED:
            _answer_mark_recovered(generation=generation)
        loop_finish(generation_id=generation.pk, state=_LOOP_END_STATE[state])
        if state == State.FAILED:
            session_state_set(
                session=generation.session,
                state=Session.State.NEEDS_ATTENTION,
                recovery_actions=wording.recovery_actions(error_code),
                explanation=error_message,
            )
        else:
            session_state_set(session=generation.session, state=Session.State.IDLE)
    return True


def _answer_mark_recovered(*, generation: PromptGeneration) -> None:
    """An answer that arrived after automatic retries says so, quietly, under its text."""
    loop = RetryLoop.objects.filter(generation=generation).first()
    if loop is None or loop.attempt < 1:
        return
    answer = (
        Message.objects.filter(generation=generation, role=Message.Role.ASSISTANT)
        .select_related("session", "generation")
        .order_by("-id")
        .first()
    )
    if answer is not None:
        recovered = {"retries": loop.attempt, "code": loop.last_code}
        message_update(message=answer, metadata={**answer.metadata, "recovered": recovered})


# How a generation's end ends its retry loop (if one is still live).
_LOOP_END_STATE: dict[str, str] = {
    State.SUCCEEDED: "succeeded",
    State.FAILED: "failed",
    State.STOPPED: "cancelled",
}


def _generation_event(generation: PromptGeneration) -> None:
    payload = {"number": generation.number, "state": generation.state}
    if generation.error_code:
        payload["error_code"] = generation.error_code
        payload["error_message"] = generation.error_message
    event_append(session=generation.session, type=event_names.GENERATION_UPDATED, payload=payload)


def generations_requeue_stale(*, older_than_s: float = 30.0) -> list[int]:
    """Enqueue again every generation still queued after ``older_than_s`` (its task was lost to a
    broker hiccup, or its enqueue never happened). Duplicates are harmless: the claim lets one
    delivery through. Returns the ids re-enqueued."""
    cutoff = timezone.now() - dt.timedelta(seconds=older_than_s)
    stale = list(
        PromptGeneration.objects.filter(state=State.QUEUED, created_at__lt=cutoff)
        # One waiting for an agent slot schedules its own next try; another would double it.
        .exclude(queue_reason=PromptGeneration.QueueReason.AGENT_SLOT)
        .values_list("pk", flat=True)
    )
    for generation_id in stale:
        generation_enqueue(generation_id=generation_id)
    return stale
