"""Provider health shared by every worker, through the real Redis, Postgres, SDK and mock provider.

Several sessions of one target fail, and the target's circuit (kept in Redis, so every worker
sees the same one) opens: new prompts and due retries wait instead of calling the provider, the
banner says the trouble is everyone's, one half-open probe goes through, and its outcome holds or
releases every waiting turn. The clock is injected; scheduled attempts are run by calling the
task's service, as the worker would when the eta arrives.
"""

from __future__ import annotations

import logging
import random
import threading

import pytest

from recovery.budget import Budget
from recovery.circuit import CircuitState, HealthSettings, Refusal
from recovery.mock.testing import SplitClock
from recovery.shared_health_wording import (
    RETRIES_SPACED_OUT,
    shared_trouble_reason,
    shared_trouble_wait_reason,
)
from sessions_app.agent import direct
from sessions_app.agent.runner import generation_retry, generation_run
from sessions_app.ladder.models import AttemptRecord, RetryLoop, RetryNotice
from sessions_app.models import Message, Note, PromptGeneration
from sessions_app.selectors import session_snapshot
from sessions_app.services import prompt_submit
from sessions_app.services.target_health import health_admit, health_failure, health_read
from tests.support.factories import SessionFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_queue")]

State = PromptGeneration.State
OVERLOADED_FOR_EVERYONE = shared_trouble_reason("provider_overloaded")
# ... and for a turn that has not failed itself: whose trouble it waits for.
WAITING_ON_EVERYONES_OVERLOAD = shared_trouble_wait_reason("provider_overloaded")


@pytest.fixture
def clock():
    return SplitClock()


@pytest.fixture
def health(settings):
    settings.KANDEV_HEALTH = HealthSettings(
        failures_to_open=3, window_s=30, open_s=10, open_max_s=40, probe_timeout_s=30
    )
    return settings.KANDEV_HEALTH


@pytest.fixture
def sessions(chat, owner):
    """Four sessions of one target (the chat's)."""
    return [chat] + [
        SessionFactory(owner=owner, target=chat.target, title=f"Chat {n}") for n in range(3)
    ]


def run_prompt(session, owner, text, clock):
    generation = prompt_submit(session=session, user=owner, text=text)
    generation_run(generation_id=generation.pk, clock=clock, rng=random.Random(7))
    generation.refresh_from_db()
    return generation


def run_due(loop, clock, *, at=None):
    """Run the loop's scheduled attempt as its eta arrives (or at ``at``)."""
    loop.refresh_from_db()
    clock.wall.set(at if at is not None else loop.next_attempt_at.timestamp())
    generation_retry(loop_id=loop.pk, attempt=loop.attempt, clock=clock, rng=random.Random(7))
    loop.refresh_from_db()
    return loop


def notice_of(session):
    return session_snapshot(session=session)["notice"]


def test_once_the_circuit_opens_a_new_prompt_waits_without_calling_the_provider(
    sessions, owner, clock, mock_provider, health, retry_settings
):
    retry_settings(jitter=0)
    mock_provider.incident_start(seconds=600, status=529)
    opened_at = clock.now()
    for session in sessions[:3]:
        assert run_prompt(session, owner, "hello", clock).state == State.WAITING_RETRY
    assert mock_provider.count() == 3
    assert health_read(target_name="Mock").state is CircuitState.OPEN

    fourth = run_prompt(sessions[3], owner, "hello", clock)

    assert mock_provider.count() == 3  # it never reached the provider
    assert fourth.state == State.WAITING_RETRY
    notice = notice_of(sessions[3])
    assert notice["reason"] == WAITING_ON_EVERYONES_OVERLOAD
    assert notice["attempt"] == 0  # it has not failed: nothing is retried, no attempt counted
    assert opened_at + 10 <= notice["retry_at_ms"] / 1000 <= opened_at + 11
    assert not AttemptRecord.objects.filter(generation=fourth).exists()  # no call, no record
    # The turns that failed first were waiting 5 s: the circuit moved them to its end too.
    for session in sessions[:3]:
        moved = notice_of(session)
        assert moved["reason"] == OVERLOADED_FOR_EVERYONE
        assert moved["retry_at_ms"] / 1000 >= opened_at + 10
        assert RetryNotice.objects.live().filter(session=session).count() == 1


def test_one_probe_goes_through_a_failed_probe_holds_everyone_and_a_successful_one_releases_them(
    sessions, owner, clock, mock_provider, health, retry_settings
):
    retry_settings(jitter=0)
    mock_provider.incident_start(seconds=600, status=529)
    generations = [run_prompt(session, owner, "hello", clock) for session in sessions]
    loops = [RetryLoop.objects.get(generation=g) for g in generations]
    assert mock_provider.count() == 3

    # The open time is over: the first due attempt is the probe, and it fails.
    loops.sort(key=lambda loop: loop.next_attempt_at)
    probe = run_due(loops[0], clock)
    assert mock_provider.count() == 4
    reopened = health_read(target_name="Mock")
    assert reopened.state is CircuitState.OPEN
    assert reopened.open_until == pytest.approx(clock.now() + 20)  # twice as long
    for loop in loops:
        loop.refresh_from_db()
        assert loop.state == RetryLoop.State.WAITING
        assert loop.next_attempt_at.timestamp() >= reopened.open_until
    assert probe.attempt == 2  # the probe was a real call: it spent an attempt

    # Another worker's probe is in flight when this turn's attempt comes due: it waits.
    clock.wall.set(reopened.open_until)
    in_flight = health_admit(target_name="Mock", now=clock.now(), retry=True)
    assert in_flight.probe
    waiting = run_due(loops[1], clock, at=reopened.open_until + 0.5)
    assert mock_provider.count() == 4
    # Nothing spent: the turn's budget still holds one attempt and the banner still says 1. (The
    # loop's own ``attempt`` is the claim's sequence number, which moves on with every schedule.)
    assert waiting.state == RetryLoop.State.WAITING
    assert Budget.from_dict(waiting.budget).attempts == 1
    assert notice_of(sessions_of(waiting))["attempt"] == 1
    assert notice_of(sessions_of(waiting))["reason"] == OVERLOADED_FOR_EVERYONE

    # That probe is lost; after its timeout the next due turn probes, the provider is back,
    # and its success releases every waiting turn at once (spread over 2 s).
    mock_provider.incident_end()
    recovered_at = reopened.open_until + health.probe_timeout_s
    run_due(loops[2], clock, at=recovered_at)
    assert health_read(target_name="Mock").state is CircuitState.CLOSED
    for loop in (loops[0], loops[1], loops[3]):
        loop.refresh_from_db()
        assert loop.state == RetryLoop.State.WAITING
        assert recovered_at <= loop.next_attempt_at.timestamp() <= recovered_at + 2
        run_due(loop, clock)

    for generation in generations:
        generation.refresh_from_db()
        assert generation.state == State.SUCCEEDED
    for session in sessions:
        answers = Message.objects.filter(session=session, role=Message.Role.ASSISTANT)
        assert [m.incomplete for m in answers] == [False]
    assert not RetryNotice.objects.live().exists()
    # Four failed calls before the probe failed twice, then four answers: nine calls in all,
    # where each turn on its own ladder would have called on every step.
    assert mock_provider.count() == 4 + 4


def sessions_of(loop):
    return loop.generation.session


def test_retry_after_from_one_response_holds_every_waiting_session_of_the_target(
    sessions, owner, clock, mock_provider, health, retry_settings
):
    retry_settings(jitter=0)
    early = run_prompt(sessions[0], owner, "/overloaded:1 hello", clock)
    early_loop = RetryLoop.objects.get(generation=early)
    assert early_loop.next_attempt_at.timestamp() == pytest.approx(clock.now() + 5)

    mock_provider.incident_start(seconds=600, status=429, retry_after=40)
    limited = run_prompt(sessions[1], owner, "hello", clock)
    mock_provider.incident_end()
    hold_until = clock.now() + 40

    early_loop.refresh_from_db()
    assert early_loop.next_attempt_at.timestamp() >= hold_until
    assert notice_of(sessions[0])["reason"] == shared_trouble_reason("rate_limited")
    assert limited.state == State.WAITING_RETRY

    # The attempt's original message still arrives at its first time: it is held again, unsent.
    calls = mock_provider.count()
    held = run_due(early_loop, clock, at=clock.now() + 5)
    assert mock_provider.count() == calls
    assert held.next_attempt_at.timestamp() >= hold_until
    run_due(held, clock)
    early.refresh_from_db()
    assert early.state == State.SUCCEEDED


def test_the_targets_retry_budget_spaces_retries_out(
    sessions, owner, clock, mock_provider, settings, retry_settings
):
    retry_settings(jitter=0)
    settings.KANDEV_HEALTH = HealthSettings(
        failures_to_open=100, retry_ratio=0.2, retry_floor_per_min=1
    )
    clock.wall.set(1_800_000_000.0)  # a minute boundary: the budget's minute is this one
    first = run_prompt(sessions[0], owner, "/overloaded:1 hello first", clock)
    second = run_prompt(sessions[1], owner, "/overloaded:1 hello second", clock)
    first_loop, second_loop = (RetryLoop.objects.get(generation=g) for g in (first, second))
    run_due(first_loop, clock)  # the one retry the floor allows this minute
    calls = mock_provider.count()

    spaced = run_due(second_loop, clock)

    assert mock_provider.count() == calls
    assert spaced.state == RetryLoop.State.WAITING
    assert spaced.next_attempt_at.timestamp() >= 1_800_000_060.0  # the next minute
    assert notice_of(sessions[1])["reason"] == RETRIES_SPACED_OUT
    # One retry in any sliding minute: it may be spaced out once more before it goes.
    for _ in range(3):
        if run_due(spaced, clock).state != RetryLoop.State.WAITING:
            break
    assert clock.now() >= 1_800_000_000.0 + 5 + 60
    second.refresh_from_db()
    assert second.state == State.SUCCEEDED


def test_two_workers_asking_at_once_after_the_open_time_make_exactly_one_probe(health):
    now = 1_800_000_000.0
    for offset in range(3):
        health_failure(target_name="Mock", now=now + offset, code="provider_overloaded")
    due = now + 20
    barrier = threading.Barrier(8)
    admissions = []

    def ask():
        barrier.wait()
        admissions.append(health_admit(target_name="Mock", now=due, retry=True))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(admission.probe for admission in admissions) == 1
    refused = [admission.refusal for admission in admissions if not admission.allowed]
    assert refused == [Refusal.PROBE_IN_FLIGHT] * 7


def test_with_redis_down_turns_still_run_and_the_outage_is_logged(
    chat, owner, clock, mock_provider, settings, retry_settings, caplog
):
    retry_settings(jitter=0)
    settings.REDIS = {**settings.REDIS, "client": "redis://127.0.0.1:1/0"}
    caplog.set_level(logging.WARNING, logger="sessions_app.redis_state")

    generation = run_prompt(chat, owner, "/overloaded:1 hello", clock)
    run_due(RetryLoop.objects.get(generation=generation), clock)

    generation.refresh_from_db()
    assert generation.state == State.SUCCEEDED
    assert mock_provider.count() == 2
    assert any("shared state unavailable" in record.getMessage() for record in caplog.records)


def test_a_call_after_tools_waits_on_the_circuit_and_the_tool_never_runs_twice(
    chat, owner, clock, mock_provider, health, retry_settings, monkeypatch
):
    """The circuit opens (other sessions' failures) while a turn runs its tool: the turn's next
    model call is not made; the turn waits with the everyone-banner and goes on after the probe."""
    retry_settings(jitter=0)
    real_tool_run = direct.tool_run

    def tool_run_while_the_target_fails(**kwargs):
        output = real_tool_run(**kwargs)
        for offset in range(3):  # other workers' calls fail meanwhile: the circuit opens
            health_failure(target_name="Mock", now=clock.now() + offset, code="provider_overloaded")
        return output

    monkeypatch.setattr(direct, "tool_run", tool_run_while_the_target_fails)

    generation = run_prompt(chat, owner, '/tool append_note {"text": "buy milk"} please', clock)

    assert mock_provider.count() == 1  # the call asking for the tool; its follow-up was held
    assert generation.state == State.WAITING_RETRY
    assert notice_of(chat)["reason"] == WAITING_ON_EVERYONES_OVERLOAD
    assert list(Note.objects.filter(session=chat).values_list("text", flat=True)) == ["buy milk"]

    opened = health_read(target_name="Mock")
    assert opened.state is CircuitState.OPEN
    run_due(RetryLoop.objects.get(generation=generation), clock)  # the probe: the follow-up call

    generation.refresh_from_db()
    assert generation.state == State.SUCCEEDED
    assert mock_provider.count() == 2
    assert health_read(target_name="Mock").state is CircuitState.CLOSED
    assert list(Note.objects.filter(session=chat).values_list("text", flat=True)) == ["buy milk"]
    assert Message.objects.filter(session=chat, role=Message.Role.TOOL_RESULT).count() == 1
    assert not RetryNotice.objects.live().exists()


def test_another_sessions_retry_after_past_the_cap_hands_a_new_prompt_back_as_it_did_the_first(
    sessions, owner, clock, mock_provider, health, retry_settings
):
    """X is handed back because the provider asked for 90 s, past the 60 s cap. Y made no call:
    it must not wait those 90 s (nor a silent 60 s, to be refused again), and nothing says Y
    failed or retried: Y is handed back at once with the same cap, naming the shared wait."""
    retry_settings(jitter=0)
    first = run_prompt(sessions[0], owner, "[[mock:overloaded:1:90]] hello", clock)
    assert first.state == State.FAILED
    assert "asked to wait 1 min 30 s" in first.error_message
    calls = mock_provider.count()

    held = run_prompt(sessions[1], owner, "tell me a joke", clock)

    assert mock_provider.count() == calls  # Y never reached the provider
    assert held.state == State.FAILED
    assert held.error_message.startswith(
        "Not sent: the provider asked everyone using this target to wait 1 min 30 s "
        "(another session's request was refused), longer than the longest wait automatic retry "
        "takes (1 min)"
    )
    assert "attempt" not in held.error_message
    assert notice_of(sessions[1]) is None


def test_another_sessions_retry_after_within_the_cap_holds_a_new_prompt_without_blame(
    sessions, owner, clock, mock_provider, health, retry_settings
):
    retry_settings(jitter=0)
    first = run_prompt(sessions[0], owner, "[[mock:overloaded:1:30]] hello", clock)
    assert first.state == State.WAITING_RETRY
    calls = mock_provider.count()

    held = run_prompt(sessions[1], owner, "tell me a joke", clock)

    assert mock_provider.count() == calls
    assert held.state == State.WAITING_RETRY
    notice = notice_of(sessions[1])
    assert notice["reason"] == (
        "Waiting: the provider asked everyone using this target to wait 30 s "
        "(another session's request was refused)"
    )
    assert notice["attempt"] == 0  # no attempt count: Y made no failing call
    assert 29 <= notice["retry_at_ms"] / 1000 - clock.now() <= 31

    loop = run_due(RetryLoop.objects.get(generation=held), clock)
    held.refresh_from_db()
    assert held.state == State.SUCCEEDED
    answer = Message.objects.filter(generation=held, role=Message.Role.ASSISTANT).latest("id")
    assert "recovered" not in answer.metadata  # no "Recovered after 1 retry"
    assert loop.state == RetryLoop.State.SUCCEEDED
