"""Fixtures for the visible ladder: a session with a generation that failed once."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from recovery.budget import Budget, RetrySettings
from recovery.clock import FakeClock
from sessions_app.ladder.models import RetryLoop
from sessions_app.models import PromptGeneration, ProviderTarget
from sessions_app.services import session_create


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def owner(db):
    return get_user_model().objects.create_user(username="owner")


@pytest.fixture
def stranger(db):
    return get_user_model().objects.create_user(username="stranger")


@pytest.fixture
def target(db):
    return ProviderTarget.objects.create(name="Mock", kind=ProviderTarget.Kind.MOCK, model="mock-1")


@pytest.fixture
def session(owner, target):
    return session_create(owner=owner, target=target, title="Plan the week")


@pytest.fixture
def running_generation(session):
    return PromptGeneration.objects.create(
        session=session, number=1, state=PromptGeneration.State.RUNNING, claimed_at=timezone.now()
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
