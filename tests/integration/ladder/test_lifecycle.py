"""Every path of the visible ladder against real Postgres, Redis, the real SDK and the mock
provider over HTTP. The clock is injected: scheduled attempts are run by calling the task's
service directly, exactly as the worker would when the eta arrives; nothing waits."""

from __future__ import annotations

import random

import pytest

from recovery.mock.testing import SplitClock
from sessions_app.agent.runner import generation_retry, generation_run
from sessions_app.errors import RetryWaiting
from sessions_app.ladder.models import AttemptRecord, RetryLoop, RetryNotice
from sessions_app.models import Message, PromptGeneration, Session, SessionEvent
from sessions_app.selectors import session_snapshot
from sessions_app.services import prompt_submit, session_stop
from sessions_app.services.prompts import retry_cancel, session_recover
from sessions_app.services.targets import session_target_set
from tests.support.factories import ProviderTargetFactory

# Scheduled attempts land in the real broker queue: celery_queue keeps it empty around each test.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_queue")]

State = PromptGeneration.State


@pytest.fixture
def clock():
    return SplitClock()


def run_prompt(chat, owner, text, clock):
    generation = prompt_submit(session=chat, user=owner, text=text)
    generation_run(generation_id=generation.pk, clock=clock, rng=random.Random(7))
    generation.refresh_from_db()
    return generation


def run_retry(loop, clock):
    loop.refresh_from_db()
    if loop.next_attempt_at is not None:
        clock.wall.set(loop.next_attempt_at.timestamp())  # the eta arrived
    return generation_retry(
        loop_id=loop.pk, attempt=loop.attempt, clock=clock, rng=random.Random(7)
    )


def notice_events(chat):
    return list(
        SessionEvent.objects.filter(session=chat, type__startswith="notice.")
        .order_by("seq")
        .values_list("type", "payload")
    )


def test_an_overload_before_output_waits_visibly_and_heals_when_the_provider_recovers(
    chat, owner, clock, mock_provider
):
    generation = run_prompt(chat, owner, "/overloaded:2 tell me a joke", clock)

    chat.refresh_from_db()
    assert generation.state == State.WAITING_RETRY
    assert chat.state == Session.State.WAITING_RETRY
    assert chat.task.status == "in_progress"  # never needs-attention while waiting
    notice = session_snapshot(session=chat)["notice"]
    assert (notice["reason"], notice["provider"], notice["model"]) == (
        "Provider overloaded",
        "Mock",
        "mock-1",
    )
    assert (notice["attempt"], notice["max_attempts"]) == (1, 5)
    wait_s = notice["retry_at_ms"] / 1000 - clock.now()
    assert 4.0 <= wait_s <= 6.0  # the first ladder step, 5 s +-20 %

    loop = RetryLoop.objects.get(generation=generation)
    run_retry(loop, clock)
    second = session_snapshot(session=chat)["notice"]
    assert (second["id"], second["attempt"]) == (notice["id"], 2)  # updated in place
    assert RetryNotice.objects.live().filter(session=chat).count() == 1

    run_retry(loop, clock)

    generation.refresh_from_db()
    chat.refresh_from_db()
    assert generation.state == State.SUCCEEDED
    assert chat.state == Session.State.IDLE
    assert session_snapshot(session=chat)["notice"] is None
    assert not RetryNotice.objects.live().exists()
    assert mock_provider.count() == 3
    answer = Message.objects.get(session=chat, role="assistant")
    assert answer.text and not answer.incomplete
    kinds = [kind for kind, _ in notice_events(chat)]
    # Each wait shows its banner, each claimed attempt re-shows it as "Retrying now…".
    assert kinds == ["notice.upserted"] * 4 + ["notice.deleted"]
    # The banner is retired before the answer's first row is pushed.
    deleted_seq = SessionEvent.objects.get(session=chat, type="notice.deleted").seq
    answer_seq = (
        SessionEvent.objects.filter(
            session=chat, type="message.created", payload__message__role="assistant"
        )
        .values_list("seq", flat=True)
        .get()
    )
    assert deleted_seq < answer_seq
    loop.refresh_from_db()
    assert loop.state == RetryLoop.State.SUCCEEDED
    assert list(
        AttemptRecord.objects.filter(generation=generation)
        .order_by("id")
        .values_list("code", "decision")
    ) == [("provider_overloaded", "retry")] * 2 + [("none", "success")]


def test_a_redelivered_attempt_runs_once(chat, owner, clock, mock_provider):
    generation = run_prompt(chat, owner, "/overloaded:1 hi", clock)
    loop = RetryLoop.objects.get(generation=generation)
    attempt = loop.attempt

    run_retry(loop, clock)
    assert generation_retry(loop_id=loop.pk, attempt=attempt, clock=clock) is None

    assert mock_provider.count() == 2
    assert Message.objects.filter(session=chat, role="assistant").count() == 1


def test_exhaustion_ends_in_an_honest_card_with_resume_and_start_fresh(
    chat, owner, clock, mock_provider, retry_settings
):
    retry_settings(max_attempts=2)
    generation = run_prompt(chat, owner, "/overloaded:99 hi", clock)
    loop = RetryLoop.objects.get(generation=generation)
    run_retry(loop, clock)
    run_retry(loop, clock)

    generation.refresh_from_db()
    chat.refresh_from_db()
    assert generation.state == State.FAILED
    assert generation.error_message.startswith("The provider remained overloaded after 2 attempts.")
    assert chat.state == Session.State.NEEDS_ATTENTION
    snapshot = session_snapshot(session=chat)
    assert snapshot["notice"] is None
    assert snapshot["recovery_actions"] == ["resume", "fresh"]
    assert mock_provider.count() == 3
    loop.refresh_from_db()
    assert loop.state == RetryLoop.State.EXHAUSTED


def test_a_hard_failure_never_shows_a_banner(chat, owner, clock, mock_provider):
    generation = run_prompt(chat, owner, "/auth hi", clock)

    assert generation.state == State.FAILED
    assert generation.error_code == "auth_required"
    assert notice_events(chat) == []
    assert mock_provider.count() == 1


def test_an_unknown_failure_fails_closed_to_manual_recovery(chat, owner, clock, mock_provider):
    generation = run_prompt(chat, owner, "/malformed:1 hi", clock)

    assert generation.state == State.FAILED
    assert notice_events(chat) == []
    assert mock_provider.count() == 1


def test_an_overload_after_text_is_kept_incomplete_and_not_replayed(
    chat, owner, clock, mock_provider
):
    generation = run_prompt(chat, owner, "/overloaded-after-text:1 hi", clock)

    assert generation.state == State.FAILED
    partial = Message.objects.get(session=chat, role="assistant")
    assert partial.incomplete and partial.text
    assert notice_events(chat) == []
    assert mock_provider.count() == 1


def test_retry_after_from_a_429_is_a_floor_for_the_next_attempt(chat, owner, clock):
    generation = run_prompt(chat, owner, "/rate-limited:1:30 hi", clock)

    loop = RetryLoop.objects.get(generation=generation)
    assert loop.next_attempt_at.timestamp() >= clock.now() + 30
    notice = session_snapshot(session=chat)["notice"]
    assert notice["code"] == "rate_limited"
    assert notice["retry_at_ms"] / 1000 >= clock.now() + 30


def test_cancel_retires_the_notice_and_offers_resume_and_start_fresh(
    chat, owner, clock, mock_provider
):
    generation = run_prompt(chat, owner, "/overloaded:1 hi", clock)
    loop = RetryLoop.objects.get(generation=generation)

    assert retry_cancel(session_id=chat.pk, user=owner) == ["resume", "fresh"]

    generation.refresh_from_db()
    chat.refresh_from_db()
    assert generation.state == State.FAILED and generation.error_code == "cancelled"
    assert chat.state == Session.State.NEEDS_ATTENTION
    assert session_snapshot(session=chat)["notice"] is None
    assert notice_events(chat)[-1][0] == "notice.deleted"
    # The attempt that was already scheduled re-checks the row and does nothing.
    assert run_retry(loop, clock) is None
    assert mock_provider.count() == 1


def test_cancel_after_the_loop_ended_still_retires_a_stale_notice(chat, owner, clock):
    generation = run_prompt(chat, owner, "/overloaded:1 hi", clock)
    RetryLoop.objects.filter(generation=generation).update(state=RetryLoop.State.FAILED)

    assert retry_cancel(session_id=chat.pk, user=owner) == []
    assert not RetryNotice.objects.live().exists()


def test_cancel_on_a_foreign_or_unknown_session_answers_like_no_loop(chat, owner, stranger, clock):
    run_prompt(chat, owner, "/overloaded:1 hi", clock)

    assert retry_cancel(session_id=chat.pk, user=stranger) == []
    assert retry_cancel(session_id=chat.pk + 1000, user=stranger) == []
    assert RetryNotice.objects.live().filter(session=chat).count() == 1  # untouched


def test_stop_during_the_wait_cancels_the_retry_like_the_banner_does(chat, owner, clock):
    generation = run_prompt(chat, owner, "/overloaded:1 hi", clock)

    session_stop(session=chat, user=owner)

    generation.refresh_from_db()
    chat.refresh_from_db()
    assert (generation.state, generation.error_code) == (State.FAILED, "cancelled")
    assert chat.state == Session.State.NEEDS_ATTENTION
    assert not RetryNotice.objects.live().exists()
    assert RetryLoop.objects.get(generation=generation).state == RetryLoop.State.CANCELLED


def test_a_new_prompt_during_the_wait_is_refused_and_the_loop_stays_armed(
    chat, owner, clock, mock_provider
):
    first = run_prompt(chat, owner, "/overloaded:1 hi", clock)
    loop = RetryLoop.objects.get(generation=first)

    with pytest.raises(RetryWaiting):
        prompt_submit(session=chat, user=owner, text="never mind, something else")

    first.refresh_from_db()
    assert first.state == State.WAITING_RETRY
    assert RetryNotice.objects.live().filter(session=chat).count() == 1
    run_retry(loop, clock)
    first.refresh_from_db()
    assert first.state == State.SUCCEEDED
    assert mock_provider.count() == 2


def test_a_target_change_during_the_wait_disarms_the_loop(chat, owner, clock, mock_provider):
    generation = run_prompt(chat, owner, "/overloaded:1 hi", clock)
    other = ProviderTargetFactory(name="Other", model="mock-2", base_url=mock_provider.url)

    session_target_set(session=chat, user=owner, target=other)

    generation.refresh_from_db()
    chat.refresh_from_db()
    assert generation.state == State.SUPERSEDED
    assert chat.state == Session.State.IDLE and chat.target == other
    assert not RetryNotice.objects.live().exists()


def test_failover_switches_target_before_any_output_and_says_so(
    chat, owner, clock, mock_provider, retry_settings
):
    backup = ProviderTargetFactory(name="Backup", model="mock-backup", base_url=mock_provider.url)
    chat.target.fallback_links.create(fallback=backup, position=0)
    retry_settings(deadline_s=3)  # the 5 s ladder step no longer fits

    generation = run_prompt(chat, owner, "/overloaded:1 hi", clock)

    notice = session_snapshot(session=chat)["notice"]
    assert notice["switched_target"] == "Backup"
    run_retry(RetryLoop.objects.get(generation=generation), clock)
    generation.refresh_from_db()
    assert generation.state == State.SUCCEEDED
    assert [r["model"] for r in mock_provider.requests()] == ["mock-1", "mock-backup"]


def test_resume_reruns_the_turn_without_feeding_back_partial_output(
    chat, owner, clock, mock_provider
):
    run_prompt(chat, owner, "/overloaded-after-text:1 hi", clock)
    chat.refresh_from_db()

    generation = session_recover(session=chat, user=owner, action="resume")
    generation_run(generation_id=generation.pk, clock=clock)

    generation.refresh_from_db()
    assert (generation.mode, generation.state) == ("resume", State.SUCCEEDED)
    answers = list(Message.objects.filter(session=chat, role="assistant").order_by("id"))
    assert [a.incomplete for a in answers] == [True, False]
    resumed_request = mock_provider.requests()[-1]
    assert resumed_request["roles"] == ["user"]  # the partial answer was not sent back


def test_start_fresh_resends_the_last_prompt_in_a_new_context(chat, owner, clock, mock_provider):
    run_prompt(chat, owner, "first question", clock)
    run_prompt(chat, owner, "/auth second question", clock)
    chat.refresh_from_db()

    generation = session_recover(session=chat, user=owner, action="fresh")

    prompts = list(Message.objects.filter(session=chat, role="user").values_list("text", flat=True))
    assert prompts[-1] == "/auth second question"
    chat.refresh_from_db()
    assert chat.context_from.text == "/auth second question"
    assert generation.mode == "fresh"
