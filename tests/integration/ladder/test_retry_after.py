"""A provider's Retry-After through the real Anthropic SDK against the mock provider: honoured as
sent, never shortened to the cap, and a wait longer than we may take is named on the card."""

from __future__ import annotations

import random

import pytest

from recovery.mock.testing import SplitClock
from sessions_app.agent.runner import generation_run
from sessions_app.ladder.models import AttemptRecord, RetryLoop
from sessions_app.models import PromptGeneration
from sessions_app.selectors import session_snapshot
from sessions_app.services import prompt_submit

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_queue")]

State = PromptGeneration.State


def run_prompt(chat, owner, text, clock):
    generation = prompt_submit(session=chat, user=owner, text=text)
    generation_run(generation_id=generation.pk, clock=clock, rng=random.Random(7))
    generation.refresh_from_db()
    return generation


def test_a_429_asking_for_90_s_waits_90_s_not_the_60_s_cap(chat, owner, mock_provider):
    clock = SplitClock()
    generation = run_prompt(chat, owner, "/rate-limited:1:90 hi", clock)

    assert generation.state == State.WAITING_RETRY
    loop = RetryLoop.objects.get(generation=generation)
    assert loop.next_attempt_at.timestamp() - clock.now() == pytest.approx(90, abs=1)
    record = AttemptRecord.objects.filter(generation=generation).latest("id")
    assert (record.decision, record.wait_s) == ("wait_for_reset", pytest.approx(90, abs=1))
    assert session_snapshot(session=chat)["notice"]["reason"] == "Rate limited"


def test_a_529_asking_for_90_s_is_handed_back_naming_the_wait(chat, owner, mock_provider):
    clock = SplitClock()
    generation = run_prompt(chat, owner, "/overloaded:1:90 hi", clock)

    assert generation.state == State.FAILED
    assert "The provider asked to wait 1 min 30 s before trying again" in generation.error_message
    assert session_snapshot(session=chat)["notice"] is None
    assert mock_provider.count() == 1  # not retried at 60 s
