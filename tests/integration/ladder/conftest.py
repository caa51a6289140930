"""Fixtures for the visible ladder: a fake clock and a generation that is running, plus a retry
loop made to order. Users, the target and the session are tests/integration/conftest.py's."""

from __future__ import annotations

import pytest
from django.utils import timezone

from recovery.budget import Budget, RetrySettings
from recovery.clock import FakeClock
from sessions_app.ladder.models import RetryLoop
from sessions_app.models import PromptGeneration
from tests.support.factories import GenerationFactory


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def running_generation(session):
    return GenerationFactory(
        session=session, state=PromptGeneration.State.RUNNING, claimed_at=timezone.now()
    )


def loop_make(*, generation, clock, state=RetryLoop.State.WAITING, attempt=2) -> RetryLoop:
    budget = Budget.start(settings=RetrySettings(), clock=clock, target="Mock")
    return RetryLoop.objects.create(
        session=generation.session,
        generation=generation,
        state=state,
        attempt=attempt,
        max_attempts=5,
        budget=budget.record_attempt(target="Mock").to_dict(),
        target_name="Mock",
    )
