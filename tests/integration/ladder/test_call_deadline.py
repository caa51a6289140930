"""The deadline runs per model call, from that call's first failure; the turn cap bounds the turn.

A tool-using turn is several model calls. Its second call failing minutes into the turn still
gets the whole ladder; only the turn cap (KANDEV_RETRY_TURN_CAP) ends recovery for the turn as a
whole. Real Postgres, the real broker queue, the real SDK over HTTP against the mock provider; the
wall clock is injected and moved by the tool ("the tool took 165 s"), nothing sleeps.
"""

from __future__ import annotations

import random

import pytest

from recovery.mock.testing import SplitClock
from sessions_app.agent import direct
from sessions_app.agent.runner import generation_retry, generation_run
from sessions_app.ladder.models import AttemptRecord, RetryLoop
from sessions_app.models import Message, Note, PromptGeneration
from sessions_app.selectors import session_snapshot
from sessions_app.services import prompt_submit

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_queue")]

State = PromptGeneration.State
TOOL_TAKES_S = 165.0
PROMPT = '/tool-then-overloaded:1 append_note {"text": "buy milk"} please'


@pytest.fixture
def clock():
    return SplitClock()


@pytest.fixture
def slow_tool(monkeypatch, clock):
    """Every tool run takes TOOL_TAKES_S on the injected wall clock."""
    real = direct.tool_run

    def tool_run(**kwargs):
        output = real(**kwargs)
        clock.wall.advance(TOOL_TAKES_S)
        return output

    monkeypatch.setattr(direct, "tool_run", tool_run)


def run_prompt(chat, owner, clock):
    generation = prompt_submit(session=chat, user=owner, text=PROMPT)
    generation_run(generation_id=generation.pk, clock=clock, rng=random.Random(7))
    generation.refresh_from_db()
    return generation


def run_retry(loop, clock):
    loop.refresh_from_db()
    clock.wall.set(loop.next_attempt_at.timestamp())
    generation_retry(loop_id=loop.pk, attempt=loop.attempt, clock=clock, rng=random.Random(7))


@pytest.mark.usefixtures("slow_tool")
def test_a_529_on_the_second_call_of_a_tool_turn_165_s_in_is_retried(
    chat, owner, clock, mock_provider
):
    started = clock.now()
    generation = run_prompt(chat, owner, clock)

    assert clock.now() - started == TOOL_TAKES_S  # the second call failed 165 s into the turn
    assert generation.state == State.WAITING_RETRY
    notice = session_snapshot(session=chat)["notice"]
    assert (notice["reason"], notice["attempt"], notice["max_attempts"]) == (
        "Provider overloaded",
        1,
        5,
    )
    assert 4.0 <= notice["retry_at_ms"] / 1000 - clock.now() <= 6.0  # the ladder's first step

    run_retry(RetryLoop.objects.get(generation=generation), clock)

    generation.refresh_from_db()
    assert generation.state == State.SUCCEEDED
    assert list(Note.objects.filter(session=chat).values_list("text", flat=True)) == ["buy milk"]
    final = Message.objects.filter(session=chat, role="assistant").last()
    assert final.text.startswith("The tool returned: Saved note #")
    assert list(
        AttemptRecord.objects.filter(generation=generation)
        .order_by("id")
        .values_list("code", "decision")
    ) == [("none", "success"), ("provider_overloaded", "retry"), ("none", "success")]


@pytest.mark.usefixtures("slow_tool")
def test_the_turn_cap_ends_recovery_even_when_the_call_has_time_left(
    chat, owner, clock, mock_provider, retry_settings
):
    retry_settings(deadline_s=150, turn_cap_s=168)  # 3 s left after the tool: no 5 s wait fits

    generation = run_prompt(chat, owner, clock)

    assert generation.state == State.FAILED
    assert "This turn has already spent 2 min 45 s" in generation.error_message
    assert session_snapshot(session=chat)["notice"] is None


def test_the_second_calls_retries_walk_its_own_ladder(chat, owner, clock, mock_provider):
    generation = prompt_submit(
        session=chat, user=owner, text="/tool-then-overloaded:2 read_clock {} what time is it"
    )
    generation_run(generation_id=generation.pk, clock=clock, rng=random.Random(7))
    loop = RetryLoop.objects.get(generation=generation)
    assert session_snapshot(session=chat)["notice"]["attempt"] == 1

    run_retry(loop, clock)  # the second call fails again

    notice = session_snapshot(session=chat)["notice"]
    assert notice["attempt"] == 2
    assert 8.0 <= notice["retry_at_ms"] / 1000 - clock.now() <= 12.0  # the ladder's second step
    run_retry(loop, clock)
    generation.refresh_from_db()
    assert generation.state == State.SUCCEEDED
