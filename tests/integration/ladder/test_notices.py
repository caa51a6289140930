"""The retry notice: one live per session, updated in place, retired (kept for the admin) with a
deletion event, so viewers never see a retired one."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from sessions_app.frames import event_html
from sessions_app.ladder.models import RetryLoop, RetryNotice
from sessions_app.models import PromptGeneration, SessionEvent
from sessions_app.selectors import session_notice, session_snapshot
from sessions_app.services.ladder import attempt_claim
from sessions_app.services.lifecycle.retry_wait import (
    notice_upsert,
    notices_cleanup,
    notices_retire,
)

from .conftest import loop_make

pytestmark = pytest.mark.django_db


def upsert(loop, *, attempt=2, retry_at=1_800_000_010.0):
    return notice_upsert(
        loop=loop,
        code="provider_overloaded",
        reason="Provider overloaded",
        provider="Mock",
        model="mock-1",
        attempt=attempt,
        max_attempts=5,
        retry_at=retry_at,
    )


def events_of(session, type_):
    return list(SessionEvent.objects.filter(session=session, type=type_).order_by("seq"))


def test_it_updates_the_one_notice_in_place_for_each_attempt(running_generation, clock):
    loop = loop_make(generation=running_generation, clock=clock)
    first = upsert(loop, attempt=2)
    second = upsert(loop, attempt=3, retry_at=1_800_000_030.0)

    assert first.pk == second.pk
    notice = RetryNotice.objects.live().get()
    assert (notice.attempt, notice.max_attempts) == (3, 5)
    pushed = events_of(running_generation.session, "notice.upserted")
    assert [e.payload["notice"]["attempt"] for e in pushed] == [2, 3]
    assert pushed[-1].payload["notice"]["retry_at_ms"] == 1_800_000_030_000


def test_it_retires_every_notice_with_a_deletion_event(running_generation, clock):
    loop = loop_make(generation=running_generation, clock=clock)
    notice = upsert(loop)

    assert notices_retire(session_id=running_generation.session_id, reason="succeeded") == [
        notice.pk
    ]

    assert not RetryNotice.objects.live().exists()
    deleted = events_of(running_generation.session, "notice.deleted")
    assert [e.payload["ids"] for e in deleted] == [[notice.pk]]


def test_a_retired_notice_is_kept_with_when_why_and_which_loop(running_generation, clock):
    loop = loop_make(generation=running_generation, clock=clock)
    notice = upsert(loop)

    notices_retire(session_id=running_generation.session_id, reason="cancelled", by=loop)

    kept = RetryNotice.objects.get(pk=notice.pk)
    assert kept.retired_at is not None
    assert (kept.retired_reason, kept.retired_by_id) == ("cancelled", loop.pk)
    assert session_notice(session=running_generation.session) is None
    snapshot = session_snapshot(session=running_generation.session)
    assert snapshot["notice"] is None


def test_a_new_banner_after_a_retired_one_is_a_new_row_and_the_only_one_shown(
    running_generation, clock
):
    loop = loop_make(generation=running_generation, clock=clock)
    old = upsert(loop, attempt=1)
    notices_retire(session_id=running_generation.session_id, reason="recovered", by=loop)

    new = upsert(loop, attempt=2)

    assert new.pk != old.pk
    assert session_notice(session=running_generation.session)["id"] == new.pk
    assert RetryNotice.objects.count() == 2


def test_retiring_a_session_without_notices_writes_no_event(running_generation):
    assert notices_retire(session_id=running_generation.session_id, reason="succeeded") == []
    assert not events_of(running_generation.session, "notice.deleted")


def test_a_late_failure_after_retirement_does_not_bring_the_notice_back(running_generation, clock):
    loop = loop_make(generation=running_generation, clock=clock)
    upsert(loop)
    RetryLoop.objects.filter(pk=loop.pk).update(state=RetryLoop.State.SUCCEEDED)
    notices_retire(session_id=loop.session_id, reason="succeeded")

    assert upsert(loop, attempt=3) is None
    assert not RetryNotice.objects.live().exists()


def test_duplicates_left_by_earlier_runs_are_consolidated_on_the_next_write(
    running_generation, session, clock
):
    old_generation = PromptGeneration.objects.create(
        session=session, number=2, state=PromptGeneration.State.FAILED
    )
    old_loop = loop_make(generation=old_generation, clock=clock, state=RetryLoop.State.FAILED)
    for _ in range(2):  # written directly, as a crashed older version might have left them
        RetryNotice.objects.create(
            session=session,
            loop=old_loop,
            code="rate_limited",
            reason="Rate limited",
            provider="Mock",
            attempt=2,
            max_attempts=5,
            retry_at="2027-01-15T08:00:00Z",
        )
    loop = loop_make(generation=running_generation, clock=clock)

    kept = upsert(loop, attempt=2)

    assert list(RetryNotice.objects.live().values_list("pk", flat=True)) == [kept.pk]
    assert kept.loop_id == loop.pk
    assert len(events_of(session, "notice.deleted")[0].payload["ids"]) == 1


def test_cleanup_retires_notices_whose_loop_already_ended(running_generation, clock):
    loop = loop_make(generation=running_generation, clock=clock)
    upsert(loop)
    RetryLoop.objects.filter(pk=loop.pk).update(state=RetryLoop.State.CANCELLED)

    assert notices_cleanup() == 1
    assert not RetryNotice.objects.live().exists()


@pytest.mark.django_db(transaction=True)
def test_two_failures_racing_for_one_session_leave_one_notice(running_generation, session, clock):
    second_generation = PromptGeneration.objects.create(
        session=session, number=2, state=PromptGeneration.State.RUNNING
    )
    loops = [
        loop_make(generation=running_generation, clock=clock),
        loop_make(generation=second_generation, clock=clock),
    ]
    start = threading.Barrier(len(loops))
    errors = []

    def fail(loop):
        try:
            start.wait()
            upsert(loop)
        except Exception as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=fail, args=(loop,)) for loop in loops]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert RetryNotice.objects.live().filter(session=session).count() == 1


def waiting_loop_with_banner(running_generation, clock, *, retry_at):
    PromptGeneration.objects.filter(pk=running_generation.pk).update(
        state=PromptGeneration.State.WAITING_RETRY
    )
    loop = loop_make(generation=running_generation, clock=clock)
    upsert(loop, retry_at=retry_at)
    return loop


def test_claiming_the_attempt_says_retrying_now_on_the_servers_clock(running_generation, clock):
    # The page counts down from when the banner's frame reached it, so it runs behind the server
    # by the push's latency; the claim's own frame says "Retrying now…" before the answer can
    # take the banner away.
    retry_at_s = time.time() + 30  # an attempt brought forward (a circuit closing) is due later
    loop = waiting_loop_with_banner(running_generation, clock, retry_at=retry_at_s)

    assert attempt_claim(loop_id=loop.pk, attempt=loop.attempt) is not None

    pushed = events_of(running_generation.session, "notice.upserted")
    assert len(pushed) == 2
    retry_at_ms = pushed[-1].payload["notice"]["retry_at_ms"]
    assert retry_at_ms <= time.time() * 1000
    html = event_html(
        session_id=running_generation.session_id,
        event="notice.upserted",
        payload=pushed[-1].payload,
        now_ms=retry_at_ms,
    )
    assert "Retrying now…" in html
    assert RetryNotice.objects.live().get().attempt == 2


def test_claiming_keeps_a_due_time_already_past(running_generation, clock):
    retry_at_s = time.time() - 2
    loop = waiting_loop_with_banner(running_generation, clock, retry_at=retry_at_s)

    attempt_claim(loop_id=loop.pk, attempt=loop.attempt)

    pushed = events_of(running_generation.session, "notice.upserted")
    assert pushed[-1].payload["notice"]["retry_at_ms"] == int(retry_at_s * 1000)


def test_claiming_an_attempt_without_a_banner_writes_no_notice(running_generation, clock):
    PromptGeneration.objects.filter(pk=running_generation.pk).update(
        state=PromptGeneration.State.WAITING_RETRY
    )
    loop = loop_make(generation=running_generation, clock=clock)

    assert attempt_claim(loop_id=loop.pk, attempt=loop.attempt) is not None

    assert events_of(running_generation.session, "notice.upserted") == []
    assert not RetryNotice.objects.exists()


def test_a_claim_already_made_does_not_touch_the_banner(running_generation, clock):
    loop = waiting_loop_with_banner(running_generation, clock, retry_at=time.time() + 30)
    attempt_claim(loop_id=loop.pk, attempt=loop.attempt)

    assert attempt_claim(loop_id=loop.pk, attempt=loop.attempt) is None
    assert len(events_of(running_generation.session, "notice.upserted")) == 2
