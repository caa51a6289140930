"""The lifecycle's tables: every declared move is applied and runs exactly its hooks, every other
move is refused, and no module outside services/lifecycle writes what the lifecycle owns."""

from __future__ import annotations

import ast
from dataclasses import asdict
from pathlib import Path

import pytest
from django.conf import settings

from sessions_app.ladder.models import AttemptRecord, RetryLoop, RetryNotice
from sessions_app.models import Message, PromptGeneration, Session, Task
from sessions_app.services import (
    generation_claim,
    generation_end,
    generation_supersede_waiting,
    message_create,
    prompt_submit,
    retry_loops_cancel,
)
from sessions_app.services.lifecycle.generation import (
    SESSION_OF,
    TRANSITIONS,
    _move,
    sources_of,
)
from sessions_app.services.lifecycle.queued import queue_hold
from sessions_app.services.lifecycle.retry_wait import RetryBanner, notice_upsert
from sessions_app.services.lifecycle.session_state import (
    SESSION_MOVES,
    SESSION_REFRESHES,
    ForbiddenTransition,
    _session_move,
    session_card_refresh,
    session_move_allowed,
    session_queue_refresh,
)
from tests.support.factories import SessionFactory
from tests.support.session_states import session_walk_to

pytestmark = pytest.mark.django_db

State = PromptGeneration.State
SessionState = Session.State
LoopState = RetryLoop.State

ALLOWED = {
    (State.QUEUED, State.RUNNING),
    (State.QUEUED, State.STOPPED),
    (State.RUNNING, State.WAITING_RETRY),
    (State.RUNNING, State.WAITING_APPROVAL),
    (State.WAITING_APPROVAL, State.RUNNING),
    (State.WAITING_APPROVAL, State.FAILED),
    (State.WAITING_APPROVAL, State.STOPPED),
    (State.RUNNING, State.SUCCEEDED),
    (State.RUNNING, State.FAILED),
    (State.RUNNING, State.STOPPED),
    (State.WAITING_RETRY, State.RUNNING),
    (State.WAITING_RETRY, State.SUPERSEDED),
    (State.WAITING_RETRY, State.STOPPED),
    (State.WAITING_RETRY, State.FAILED),
}
FORBIDDEN = sorted(
    {(source, target) for source in State for target in State if source != target} - ALLOWED
)
SESSION_ALLOWED = {
    (SessionState.IDLE, SessionState.QUEUED),
    (SessionState.QUEUED, SessionState.RUNNING),
    (SessionState.QUEUED, SessionState.IDLE),
    (SessionState.RUNNING, SessionState.WAITING_RETRY),
    (SessionState.RUNNING, SessionState.NEEDS_APPROVAL),
    (SessionState.NEEDS_APPROVAL, SessionState.RUNNING),
    (SessionState.NEEDS_APPROVAL, SessionState.IDLE),
    (SessionState.NEEDS_APPROVAL, SessionState.NEEDS_ATTENTION),
    (SessionState.RUNNING, SessionState.IDLE),
    (SessionState.RUNNING, SessionState.NEEDS_ATTENTION),
    (SessionState.WAITING_RETRY, SessionState.RUNNING),
    (SessionState.WAITING_RETRY, SessionState.IDLE),
    (SessionState.WAITING_RETRY, SessionState.NEEDS_ATTENTION),
    (SessionState.NEEDS_ATTENTION, SessionState.QUEUED),
    # Refreshes: the place in line, and the card after a target switch.
    (SessionState.QUEUED, SessionState.QUEUED),
    (SessionState.NEEDS_ATTENTION, SessionState.NEEDS_ATTENTION),
}
SESSION_FORBIDDEN = sorted({(s, t) for s in SessionState for t in SessionState} - SESSION_ALLOWED)

# What each destination's hooks leave behind, written out here so the test reads the intent.
SESSION_AFTER = {
    State.RUNNING: SessionState.RUNNING,
    State.WAITING_RETRY: SessionState.WAITING_RETRY,
    State.WAITING_APPROVAL: SessionState.NEEDS_APPROVAL,
    State.SUCCEEDED: SessionState.IDLE,
    State.STOPPED: SessionState.IDLE,
    State.SUPERSEDED: SessionState.IDLE,
    State.FAILED: SessionState.NEEDS_ATTENTION,
}
LOOP_END = {
    State.SUCCEEDED: LoopState.SUCCEEDED,
    State.FAILED: LoopState.FAILED,
    State.STOPPED: LoopState.CANCELLED,
    State.SUPERSEDED: LoopState.DISARMED,
}
BANNER_RETIRED = {
    State.SUCCEEDED: RetryNotice.Retired.SUCCEEDED,
    State.FAILED: RetryNotice.Retired.FAILED,
    State.STOPPED: RetryNotice.Retired.CANCELLED,
    State.SUPERSEDED: RetryNotice.Retired.REPLACED,
}
BANNER = RetryBanner(
    code="provider_overloaded",
    reason="Provider overloaded",
    provider="Mock",
    model="mock-1",
    attempt=2,
    max_attempts=5,
    retry_at=1_800_000_010.0,
)


def test_the_machine_has_exactly_the_listed_moves():
    listed = {(source, target) for source, targets in TRANSITIONS.items() for target in targets}
    assert listed == ALLOWED


def test_ended_states_never_move_again():
    for ended in (State.SUCCEEDED, State.FAILED, State.STOPPED, State.SUPERSEDED):
        assert ended not in TRANSITIONS


def test_the_session_has_exactly_the_listed_moves_and_refreshes():
    listed = {(source, target) for source, targets in SESSION_MOVES.items() for target in targets}
    refreshes = {(state, state) for state in SESSION_REFRESHES}
    assert listed | refreshes == SESSION_ALLOWED


@pytest.mark.parametrize(("source", "destination"), sorted(ALLOWED))
def test_every_generation_move_asks_for_a_declared_session_move(source, destination):
    assert session_move_allowed(SESSION_OF[source], SESSION_OF[destination])


def generation_in(state: str, session, user) -> PromptGeneration:
    """A generation in ``state`` with its session showing it, as the lifecycle would leave them
    (test set-up: the generation's row is written directly, the session walks declared moves)."""
    generation = prompt_submit(session=session, user=user, text="hello")
    PromptGeneration.objects.filter(pk=generation.pk).update(state=state)
    generation.state = state
    session_walk_to(session=session, state=SESSION_OF[state])
    generation.session = session
    return generation


def retry_under_way(generation: PromptGeneration) -> RetryLoop:
    """A first retry of the generation: waiting with its banner, or its attempt running."""
    waiting = generation.state == State.WAITING_RETRY
    loop = RetryLoop.objects.create(
        session=generation.session,
        generation=generation,
        state=LoopState.WAITING if waiting else LoopState.RUNNING,
        attempt=1,
        max_attempts=5,
        budget={},
        target_name="Mock",
        last_code="provider_overloaded",
    )
    # The call that failed, as the ladder records it: the retries an answer recovered from are
    # the turn's failed calls, not the loop's counter.
    AttemptRecord.objects.create(
        session=generation.session,
        generation=generation,
        attempt=0,
        target="Mock",
        code="provider_overloaded",
        decision="retry",
    )
    if waiting:
        notice_upsert(loop=loop, **asdict(BANNER))
    return loop


def held_prompt_of(user, target) -> PromptGeneration:
    """The person's prompt in another session, held behind their running ones."""
    other = SessionFactory(owner=user, target=target, title="Another")
    held = prompt_submit(session=other, user=user, text="next, please")
    queue_hold(generation=held, reason=PromptGeneration.QueueReason.USER_LIMIT)
    return held


@pytest.mark.parametrize(("source", "destination"), sorted(ALLOWED))
def test_every_listed_move_runs_exactly_its_declared_hooks(
    source, destination, session, owner, target
):
    held = held_prompt_of(owner, target)
    generation = generation_in(source, session, owner)
    loop = retry_under_way(generation) if source != State.QUEUED else None
    answer = message_create(
        session=session, generation=generation, role=Message.Role.ASSISTANT, text="Done."
    )
    events_before = list(session.events.values_list("seq", flat=True))
    if destination == State.WAITING_RETRY:
        moved = _move(generation, to=destination, loop=loop, banner=BANNER)
    else:
        moved = _move(generation, to=destination)

    assert moved is True
    generation.refresh_from_db()
    assert generation.state == destination
    announced = session.events.exclude(seq__in=events_before).filter(type="generation.updated")
    assert [event.payload["state"] for event in announced] == [destination]
    session.refresh_from_db()
    assert session.state == SESSION_AFTER[destination]
    live_banners = RetryNotice.objects.live().filter(session=session)
    if loop is not None:
        loop.refresh_from_db()
        if destination in LOOP_END:
            assert (loop.state, loop.ended_at is not None) == (LOOP_END[destination], True)
            assert not live_banners.exists()
        else:
            assert loop.state in RetryLoop.LIVE_STATES
            # Shown on entering the retry wait and kept while its attempt runs; an approval
            # wait shows no retry banner.
            expected = 1 if State.WAITING_RETRY in (source, destination) else 0
            assert live_banners.count() == expected
    if source == State.WAITING_RETRY and destination in BANNER_RETIRED:
        retired = RetryNotice.objects.get(session=session)
        assert (retired.retired_reason, retired.retired_by_id) == (
            BANNER_RETIRED[destination],
            loop.pk,
        )
    held.refresh_from_db()
    released = held.queue_reason == PromptGeneration.QueueReason.WORKER
    assert released is (source == State.RUNNING)  # leaving running frees a worker
    answer.refresh_from_db()
    recovered = answer.metadata.get("recovered")
    if destination == State.SUCCEEDED:
        assert recovered == {"retries": 1, "code": "provider_overloaded"}
    else:
        assert recovered is None


@pytest.mark.parametrize(("source", "destination"), FORBIDDEN)
def test_every_other_move_is_refused_and_changes_nothing(source, destination, session, owner):
    generation = PromptGeneration.objects.create(session=session, number=1)
    PromptGeneration.objects.filter(pk=generation.pk).update(state=source)  # test set-up only
    events_before = session.events.count()

    with pytest.raises(ForbiddenTransition):
        _move(generation, to=destination, sources=(source,))

    generation.refresh_from_db()
    assert generation.state == source
    assert session.events.count() == events_before


def test_leaving_a_wait_for_superseded_disarms_the_loop_and_retires_the_banner(session, owner):
    generation = generation_in(State.WAITING_RETRY, session, owner)
    loop = retry_under_way(generation)

    assert generation_supersede_waiting(session=session) == generation

    loop.refresh_from_db()
    assert loop.state == LoopState.DISARMED
    notice = RetryNotice.objects.get(session=session)
    assert notice.retired_reason == RetryNotice.Retired.REPLACED
    assert Session.objects.get(pk=session.pk).state == SessionState.IDLE


def test_a_success_after_retries_marks_the_answer_recovered_and_ends_the_loop_succeeded(
    session, owner
):
    generation = generation_in(State.RUNNING, session, owner)
    loop = retry_under_way(generation)
    answer = message_create(
        session=session, generation=generation, role=Message.Role.ASSISTANT, text="Here."
    )

    assert generation_end(generation=generation, state=State.SUCCEEDED) is True

    loop.refresh_from_db()
    answer.refresh_from_db()
    assert loop.state == LoopState.SUCCEEDED
    assert answer.metadata["recovered"] == {"retries": 1, "code": "provider_overloaded"}
    assert Session.objects.get(pk=session.pk).state == SessionState.IDLE


def test_a_cancelled_retry_fails_the_generation_but_cancels_its_loop(session, owner):
    generation = generation_in(State.WAITING_RETRY, session, owner)
    loop = retry_under_way(generation)

    assert [cancelled.pk for cancelled in retry_loops_cancel(session_id=session.pk)] == [loop.pk]

    generation.refresh_from_db()
    loop.refresh_from_db()
    session.refresh_from_db()
    assert (generation.state, generation.error_code) == (State.FAILED, "cancelled")
    assert loop.state == LoopState.CANCELLED
    notice = RetryNotice.objects.get(session=session)
    assert notice.retired_reason == RetryNotice.Retired.CANCELLED
    assert session.state == SessionState.NEEDS_ATTENTION
    assert session.events.order_by("-seq").first().payload["recovery_actions"] == [
        "resume",
        "fresh",
    ]


@pytest.mark.parametrize(("source", "destination"), sorted(SESSION_ALLOWED))
def test_every_declared_session_move_is_written_and_announced(source, destination, session):
    session_walk_to(session=session, state=source)
    events_before = session.events.count()

    _session_move(session=session, source=source, to=destination)

    session.refresh_from_db()
    assert session.state == destination
    assert session.events.count() == events_before + 1
    last = session.events.order_by("-seq").first()
    assert (last.type, last.payload["state"]) == ("session.updated", destination)
    expected_status = {
        SessionState.IDLE: "open",
        SessionState.NEEDS_ATTENTION: "needs_attention",
    }.get(destination, "in_progress")
    assert Task.objects.get(pk=session.task_id).status == expected_status


@pytest.mark.parametrize(("source", "destination"), SESSION_FORBIDDEN)
def test_every_other_session_move_is_refused_and_changes_nothing(source, destination, session):
    session_walk_to(session=session, state=source)
    events_before = session.events.count()

    with pytest.raises(ForbiddenTransition):
        _session_move(session=session, source=source, to=destination)

    session.refresh_from_db()
    assert session.state == source
    assert session.events.count() == events_before


def test_the_place_in_line_is_a_refresh_of_the_queued_state(session, owner):
    generation = prompt_submit(session=session, user=owner, text="hello")
    events_before = session.events.count()

    session_queue_refresh(
        generation=generation, ahead=3, queue={"ahead": 3, "reason": "", "generation": 1}
    )

    last = session.events.order_by("-seq").first()
    assert session.events.count() == events_before + 1
    assert (last.payload["state"], last.payload["queue"]["ahead"]) == ("queued", 3)
    generation.refresh_from_db()
    assert generation.queue_ahead == 3


def test_a_card_refresh_says_nothing_for_a_session_that_needs_no_attention(session):
    events_before = session.events.count()

    session_card_refresh(session=session)

    assert session.events.count() == events_before


def test_a_move_from_a_state_the_row_is_not_in_loses_the_race_quietly(session, owner):
    generation = prompt_submit(session=session, user=owner, text="hello")
    assert generation_claim(generation_id=generation.pk) is not None

    assert generation_claim(generation_id=generation.pk) is None  # a duplicate delivery
    assert generation_end(generation=generation, state=State.SUCCEEDED) is True
    assert generation_end(generation=generation, state=State.STOPPED) is False
    generation.refresh_from_db()
    assert generation.state == State.SUCCEEDED


def test_a_queued_generation_can_not_succeed_without_running(session, owner):
    generation = prompt_submit(session=session, user=owner, text="hello")

    assert State.QUEUED not in sources_of(State.SUCCEEDED)
    assert generation_end(generation=generation, state=State.SUCCEEDED) is False
    generation.refresh_from_db()
    assert generation.state == State.QUEUED


# ---- the package scan: what the lifecycle owns, nobody else writes --------------------------

OWNER = Path(settings.BASE_DIR) / "sessions_app" / "services" / "lifecycle"
WRITES = ("update", "create", "bulk_create", "bulk_update", "update_or_create", "get_or_create")
# A loop's claim and schedule set these; every other loop state is an end, the lifecycle's.
LOOP_LIVE = ("State.RUNNING", "State.WAITING")
# Names a value of an owned state ends in (generation, session, loop end states).
OWNED_VALUES = (
    "QUEUED", "RUNNING", "WAITING_RETRY", "SUCCEEDED", "FAILED", "STOPPED", "SUPERSEDED",
    "IDLE", "NEEDS_ATTENTION", "EXHAUSTED", "CANCELLED", "DISARMED",
)  # fmt: skip
PRIVATE = {"_move", "_session_move", "_session_write", "_loop_end", "_retire"}


def _owned_writes(tree: ast.AST) -> list[str]:
    """What a module writes of the lifecycle's own state, as "line: what" strings."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr not in WRITES:
                continue
            receiver = ast.unparse(node.func.value)
            keywords = {keyword.arg: ast.unparse(keyword.value) for keyword in node.keywords}
            if "retired_at" in keywords or "retired_reason" in keywords:
                found.append(f"{node.lineno}: retires a notice")
            if "RetryLoop" in receiver:
                if "ended_at" in keywords or keywords.get("state", LOOP_LIVE[0]) not in LOOP_LIVE:
                    found.append(f"{node.lineno}: ends a retry loop")
            elif "state" in keywords and ("PromptGeneration" in receiver or "Session." in receiver):
                found.append(f"{node.lineno}: writes {receiver.split('.')[0]}.state")
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                value = ast.unparse(node.value)
                if (
                    isinstance(target, ast.Attribute)
                    and target.attr == "state"
                    and value.endswith(OWNED_VALUES)
                    and value != "State.WAITING"
                ):
                    found.append(f"{node.lineno}: sets .state = {value}")
        elif isinstance(node, ast.ImportFrom) and any(a.name in PRIVATE for a in node.names):
            found.append(f"{node.lineno}: imports the lifecycle's private moves")
    return found


def test_no_module_but_the_lifecycle_writes_what_the_lifecycle_owns():
    package = Path(settings.BASE_DIR) / "sessions_app"
    writers = {
        str(path.relative_to(package)): found
        for path in package.rglob("*.py")
        if OWNER not in path.parents and "migrations" not in path.parts
        if (found := _owned_writes(ast.parse(path.read_text())))
    }
    assert writers == {}


def test_the_scan_finds_every_kind_of_write_in_the_lifecycle_itself():
    found = " ".join(
        line for path in OWNER.glob("*.py") for line in _owned_writes(ast.parse(path.read_text()))
    )
    for kind in (
        "retires a notice",
        "ends a retry loop",
        "PromptGeneration.state",
        "Session.state",
    ):
        assert kind in found
