"""Prompt generations: the table of their moves, and the hooks each move runs.

Every write of ``PromptGeneration.state`` goes through ``_move``: it refuses a move that
``TRANSITIONS`` does not list, locks the row only while it is in an allowed source state
(SELECT ... FOR UPDATE with the state in the WHERE clause, so two processes racing on one
generation can never both win, and the hooks learn which state it left), writes the move,
announces it, then runs the hooks declared for
leaving the old state (``ON_LEAVE``) and entering the new one (``ON_ENTER``), in the same
transaction::

    queued        -> running | stopped
    running       -> waiting_approval | waiting_retry | succeeded | failed | stopped
    waiting_approval -> running | failed | stopped
    waiting_retry -> running | superseded | stopped | failed

Entering a state moves the session to ``SESSION_OF[state]``. Entering ``waiting_retry`` shows
the one retry banner. Ending a generation ends its retry loop in ``LOOP_END_OF[state]`` (its
banner retired for that end's reason); a success after retries marks the answer recovered.
Leaving ``running`` frees a worker, so the person's next held prompt goes back in line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from recovery import wording
from sessions_app import event_types as event_names
from sessions_app.enqueue import generation_enqueue
from sessions_app.ladder.models import RetryLoop
from sessions_app.models import Message, PromptGeneration, Session
from sessions_app.selectors import calls_failed, queue_ahead, queue_dict
from sessions_app.services.event_log import event_append
from sessions_app.services.lifecycle.queued import (
    queue_hold,
    queue_release_next,
    user_at_limit,
    user_lock,
    workspace_busy,
    workspace_release_next,
)
from sessions_app.services.lifecycle.retry_wait import (
    RetryBanner,
    generation_loop_end,
    notice_upsert,
    session_loops_end,
)
from sessions_app.services.lifecycle.session_state import ForbiddenTransition, _session_move
from sessions_app.services.messages import message_update
from sessions_app.text_rules import storable_text

State = PromptGeneration.State
SessionState = Session.State
LoopState = RetryLoop.State

TRANSITIONS: Mapping[str, frozenset[str]] = {
    State.QUEUED: frozenset({State.RUNNING, State.STOPPED}),
    State.RUNNING: frozenset(
        {State.WAITING_APPROVAL, State.WAITING_RETRY, State.SUCCEEDED, State.FAILED, State.STOPPED}
    ),
    # The worker still holds the turn: a decision resumes it; Stop or a lost worker ends it.
    State.WAITING_APPROVAL: frozenset({State.RUNNING, State.FAILED, State.STOPPED}),
    State.WAITING_RETRY: frozenset({State.RUNNING, State.SUPERSEDED, State.STOPPED, State.FAILED}),
}
ENDED_STATES = (State.SUCCEEDED, State.FAILED, State.STOPPED, State.SUPERSEDED)
# What the session shows while its generation is in each state.
SESSION_OF: Mapping[str, str] = {
    State.QUEUED: SessionState.QUEUED,
    State.RUNNING: SessionState.RUNNING,
    State.WAITING_RETRY: SessionState.WAITING_RETRY,
    State.WAITING_APPROVAL: SessionState.NEEDS_APPROVAL,
    State.SUCCEEDED: SessionState.IDLE,
    State.STOPPED: SessionState.IDLE,
    State.SUPERSEDED: SessionState.IDLE,
    State.FAILED: SessionState.NEEDS_ATTENTION,
}
# How an ending generation ends its retry loop, if one is still live.
LOOP_END_OF: Mapping[str, str] = {
    State.SUCCEEDED: LoopState.SUCCEEDED,
    State.FAILED: LoopState.FAILED,
    State.STOPPED: LoopState.CANCELLED,
    State.SUPERSEDED: LoopState.DISARMED,
}


@dataclass(frozen=True, slots=True)
class Move:
    """One move of a generation, as its hooks see it."""

    generation: PromptGeneration
    source: str | None  # None: the generation was just created
    to: str
    loop: RetryLoop | None = None  # entering waiting_retry: the loop that waits
    banner: RetryBanner | None = None  # and what its banner says
    loop_end: str | None = None  # how the loop ends when not LOOP_END_OF[to] (a cancel)


Hook = Callable[[Move], None]


def _line_place(move: Move) -> None:
    generation = move.generation
    generation.queue_ahead = queue_ahead(generation=generation)
    PromptGeneration.objects.filter(pk=generation.pk).update(queue_ahead=generation.queue_ahead)


def _run_enqueue(move: Move) -> None:
    generation_id = move.generation.pk
    # robust: the prompt is committed either way; a broker hiccup must not turn that into a
    # server error. A queued generation that never got its task is re-enqueued by a sweeper.
    transaction.on_commit(lambda: generation_enqueue(generation_id=generation_id), robust=True)


def _banner_show(move: Move) -> None:
    if move.loop is not None and move.banner is not None:
        notice_upsert(loop=move.loop, **asdict(move.banner))


def _session_follow(move: Move) -> None:
    generation = move.generation
    session = generation.session
    # A new generation moves the session from where it rests (idle, or needing attention).
    source = SESSION_OF[move.source] if move.source is not None else session.state
    to = SESSION_OF[move.to]
    if to == SessionState.NEEDS_ATTENTION:
        _session_move(
            session=session,
            source=source,
            to=to,
            recovery_actions=wording.recovery_actions(generation.error_code),
            explanation=generation.error_message,
        )
    elif to == SessionState.QUEUED:
        assert generation.queue_ahead is not None  # _line_place, the hook before, set it
        queue = queue_dict(generation, generation.queue_ahead)
        _session_move(session=session, source=source, to=to, queue=queue)
    else:
        _session_move(session=session, source=source, to=to)


def _next_prompt_release(move: Move) -> None:
    queue_release_next(user_id=move.generation.requested_by_id)
    workspace_release_next(task_id=move.generation.session.task_id)


def _loop_end(move: Move) -> None:
    state = move.loop_end or LOOP_END_OF[move.to]
    generation_loop_end(generation_id=move.generation.pk, state=state)


def _answer_mark_recovered(move: Move) -> None:
    """An answer that arrived after automatic retries says so, quietly, under its text. The
    retries are the turn's failed calls: a turn that only waited for the target's shared health
    (another session's trouble) made no call that failed, and recovered from nothing."""
    loop = RetryLoop.objects.filter(generation=move.generation).first()
    failed = calls_failed(generation=move.generation) if loop is not None else 0
    if loop is None or failed < 1:
        return
    answer = (
        Message.objects.filter(generation=move.generation, role=Message.Role.ASSISTANT)
        .select_related("session", "generation")
        .order_by("-id")
        .first()
    )
    if answer is not None:
        recovered = {"retries": failed, "code": loop.last_code}
        message_update(message=answer, metadata={**answer.metadata, "recovered": recovered})


# The hooks, in the order they run: leaving the old state's, then entering the new one's.
ON_LEAVE: Mapping[str, tuple[Hook, ...]] = {
    State.RUNNING: (_next_prompt_release,),
}
ON_ENTER: Mapping[str, tuple[Hook, ...]] = {
    State.QUEUED: (_line_place, _session_follow, _run_enqueue),
    State.RUNNING: (_session_follow,),
    # No hook leaves or enters it that frees the worker: the turn goes on after the decision.
    State.WAITING_APPROVAL: (_session_follow,),
    State.WAITING_RETRY: (_banner_show, _session_follow),
    State.SUCCEEDED: (_answer_mark_recovered, _loop_end, _session_follow),
    State.FAILED: (_loop_end, _session_follow),
    State.STOPPED: (_loop_end, _session_follow),
    State.SUPERSEDED: (_loop_end, _session_follow),
}


def sources_of(target: str) -> tuple[str, ...]:
    """Every state a generation may leave for ``target``."""
    return tuple(source for source, targets in TRANSITIONS.items() if target in targets)


def _move(
    generation: PromptGeneration,
    *,
    to: str,
    sources: Iterable[str] | None = None,
    loop: RetryLoop | None = None,
    banner: RetryBanner | None = None,
    loop_end: str | None = None,
    **fields: object,
) -> bool:
    """Move ``generation`` to ``to`` if it is in one of ``sources`` (default: every state allowed
    to reach ``to``), writing ``fields`` with it, announcing the move and running its hooks.
    False when it was not there (a race someone else won); ForbiddenTransition for a move the
    machine does not have."""
    sources = tuple(sources) if sources is not None else sources_of(to)
    for source in sources:
        if to not in TRANSITIONS.get(source, frozenset()):
            raise ForbiddenTransition("a generation", source, to)
    with transaction.atomic():
        current = (
            PromptGeneration.objects.select_for_update(no_key=True)
            .filter(pk=generation.pk, state__in=sources)
            .values_list("state", flat=True)
            .first()
        )
        if current is None:
            return False
        PromptGeneration.objects.filter(pk=generation.pk).update(state=to, **fields)
        generation.state = to
        for name, value in fields.items():
            setattr(generation, name, value)
        _generation_event(generation)
        _hooks_run(Move(generation, current, to, loop=loop, banner=banner, loop_end=loop_end))
    return True


def _hooks_run(move: Move) -> None:
    leaving = ON_LEAVE.get(move.source, ()) if move.source is not None else ()
    for hook in (*leaving, *ON_ENTER.get(move.to, ())):
        hook(move)


def generation_create(
    *, session: Session, mode: str, requested_by: User | None
) -> PromptGeneration:
    """The session's next generation, born queued. The caller holds the session's row lock,
    writes the user message it answers (if any), then calls ``generation_open``."""
    last = PromptGeneration.objects.filter(session=session).aggregate(n=Max("number"))["n"]
    return PromptGeneration.objects.create(
        session=session,
        number=(last or 0) + 1,
        mode=mode,
        requested_by=requested_by if requested_by is not None and requested_by.pk else None,
    )


def generation_open(*, session: Session, generation: PromptGeneration) -> None:
    """A created generation enters ``queued``: announced, given its place in line (its session
    says so) and its run enqueued on commit, until a worker claims it."""
    generation.session = session
    _generation_event(generation)
    _hooks_run(Move(generation, None, State.QUEUED))


def generation_claim(*, generation_id: int) -> PromptGeneration | None:
    """Take a queued generation for this worker, and its session is running. None when there is
    nothing to run: a duplicate delivery (the conditional lock lets exactly one claimant
    through), or a person who already has KANDEV_USER_MAX_RUNNING generations running, whose
    prompt is then held in line until one of theirs stops running (lifecycle/queued.py)."""
    generation = (
        PromptGeneration.objects.select_related("session", "session__target")
        .filter(pk=generation_id)
        .first()
    )
    if generation is None or generation.state != State.QUEUED:
        return None
    with transaction.atomic():
        user_lock(user_id=generation.requested_by_id)
        if user_at_limit(user_id=generation.requested_by_id):
            queue_hold(generation=generation, reason=PromptGeneration.QueueReason.USER_LIMIT)
            return None
        if workspace_busy(generation=generation):
            queue_hold(generation=generation, reason=PromptGeneration.QueueReason.WORKSPACE)
            return None
        now = timezone.now()
        if not _move(
            generation, to=State.RUNNING, sources=(State.QUEUED,), claimed_at=now, heartbeat_at=now
        ):
            return None
    return generation


def generation_await_retry(
    *, generation: PromptGeneration, loop: RetryLoop, banner: RetryBanner
) -> bool:
    """The ladder scheduled ``loop``'s next attempt: the running generation waits, showing
    ``banner``. Waiting holds no worker, so the person's next prompt in line may run meanwhile."""
    return _move(
        generation, to=State.WAITING_RETRY, sources=(State.RUNNING,), loop=loop, banner=banner
    )


def generation_retry_claim(*, generation: PromptGeneration) -> bool:
    """A scheduled retry attempt starts: the waiting generation runs again."""
    return _move(
        generation, to=State.RUNNING, sources=(State.WAITING_RETRY,), heartbeat_at=timezone.now()
    )


def generation_end(
    *,
    generation: PromptGeneration,
    state: str,
    error_code: str = "",
    error_message: str = "",
    loop_end: str | None = None,
) -> bool:
    """Finish an active generation as succeeded, failed or stopped; the hooks settle the rest.

    Returns False (and changes nothing) when the generation had already ended, e.g. a stop that
    raced a success. ``error_message`` must already be redacted. ``loop_end`` overrides how a
    live retry loop ends (a cancelled retry fails the generation but cancels its loop).
    """
    if state not in (State.SUCCEEDED, State.FAILED, State.STOPPED):
        raise ValueError(f"{state!r} does not end a generation")
    return _move(
        generation,
        to=state,
        loop_end=loop_end,
        error_code=error_code,
        # It may quote a provider's error body or an agent's stderr tail, which may hold NUL.
        error_message=storable_text(error_message),
        finished_at=timezone.now(),
    )


def generation_supersede_waiting(*, session: Session) -> PromptGeneration | None:
    """Start fresh or a target change replaces a generation that is only waiting to retry: its
    loop is disarmed and its banner retired, so the old retry can never fire."""
    with transaction.atomic():
        waiting = (
            PromptGeneration.objects.select_for_update(no_key=True)
            .filter(session=session, state=State.WAITING_RETRY)
            .first()
        )
        if waiting is None:
            return None
        waiting.session = session
        _move(
            waiting, to=State.SUPERSEDED, sources=(State.WAITING_RETRY,), finished_at=timezone.now()
        )
        session_loops_end(session_id=session.pk)
    return waiting


def retry_loops_cancel(*, session_id: int) -> list[RetryLoop]:
    """Cancel the session's live retry loops and retire their banner: what Stop and the banner's
    Cancel both do during a retry. Each loop's generation ends failed ("cancelled"), so every
    viewer's card offers Resume and Start fresh; a worker mid-attempt notices the stop flag
    within a poll, and its late end is refused by the state machine. Returns the loops."""
    with transaction.atomic():
        loops = list(
            RetryLoop.objects.select_for_update(no_key=True).filter(
                session_id=session_id, state__in=RetryLoop.LIVE_STATES
            )
        )
        for loop in loops:
            generation_stop_request(generation_id=loop.generation_id)
            generation_end(
                generation=PromptGeneration.objects.select_related("session").get(
                    pk=loop.generation_id
                ),
                state=State.FAILED,
                error_code="cancelled",
                error_message=wording.RETRY_CANCELLED,
                loop_end=LoopState.CANCELLED,
            )
        # A loop whose generation had already ended, and a banner left behind, end here.
        session_loops_end(session_id=session_id, state=LoopState.CANCELLED)
    return loops


def generation_stop_request(*, generation_id: int) -> None:
    """Flag a generation to stop: the worker running it notices within a poll interval."""
    PromptGeneration.objects.filter(pk=generation_id).update(stop_requested=True)


def _generation_event(generation: PromptGeneration) -> None:
    payload = {"number": generation.number, "state": generation.state}
    if generation.error_code:
        payload["error_code"] = generation.error_code
        payload["error_message"] = generation.error_message
    event_append(session=generation.session, type=event_names.GENERATION_UPDATED, payload=payload)


def generations_stop_requested(*, generation_ids: Iterable[int]) -> list[int]:
    """Which of these generations someone asked to stop (one query for all of them)."""
    return list(
        PromptGeneration.objects.filter(
            pk__in=list(generation_ids), stop_requested=True
        ).values_list("pk", flat=True)
    )
