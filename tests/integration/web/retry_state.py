"""A session caught in the middle of a retry, built with the ladder's own services: a generation
waiting to retry, its live loop and the one notice the banner shows."""

from __future__ import annotations

from django.utils import timezone

from recovery.budget import Budget, RetrySettings
from recovery.clock import FakeClock
from sessions_app.ladder.models import RetryLoop, RetryNotice
from sessions_app.models import Message, PromptGeneration, Session
from sessions_app.services import message_create
from sessions_app.services.lifecycle.retry_wait import notice_upsert
from tests.support.session_states import session_walk_to

RETRY_AT_S = 1_800_000_009.0  # a fixed instant, so rendered countdowns are exact


def waiting_session(*, session: Session, reason: str = "Provider overloaded") -> RetryNotice:
    generation = PromptGeneration.objects.create(
        session=session,
        number=1,
        state=PromptGeneration.State.WAITING_RETRY,
        claimed_at=timezone.now(),
    )
    message_create(session=session, generation=generation, role=Message.Role.USER, text="hi")
    budget = Budget.start(settings=RetrySettings(), clock=FakeClock(), target="Mock")
    loop = RetryLoop.objects.create(
        session=session,
        generation=generation,
        state=RetryLoop.State.WAITING,
        attempt=2,
        max_attempts=5,
        budget=budget.record_attempt(target="Mock").to_dict(),
        target_name="Mock",
    )
    session_walk_to(session=session, state=Session.State.WAITING_RETRY)
    notice = notice_upsert(
        loop=loop,
        code="provider_overloaded",
        reason=reason,
        provider="Mock",
        model="mock-1",
        attempt=2,
        max_attempts=5,
        retry_at=RETRY_AT_S,
    )
    assert notice is not None
    return notice
