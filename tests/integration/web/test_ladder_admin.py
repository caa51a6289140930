"""The admin for notice inspection: retired notices stay listed (when, why, which loop), lists
filter by state, provider, session and date, times and durations read as people say them, and
nothing that would break the ladder can be edited, added or deleted."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from recovery.budget import Budget, RetrySettings
from recovery.clock import FakeClock
from sessions_app.ladder.admin import human_duration, loop_outcome
from sessions_app.ladder.models import AttemptRecord, RetryLoop, RetryNotice
from sessions_app.models import PromptGeneration
from sessions_app.services.lifecycle.retry_wait import notices_retire
from tests.integration.web.retry_state import waiting_session
from tests.support.factories import SessionFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff() -> Client:
    admin = UserFactory(username="operator", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(admin)
    return client


@pytest.fixture
def retired(session) -> RetryNotice:
    notice = waiting_session(session=session)
    notices_retire(session_id=session.pk, reason="cancelled", by=notice.loop)
    return RetryNotice.objects.get(pk=notice.pk)


def test_a_retired_notice_is_listed_with_when_why_and_which_loop(staff, retired):
    page = staff.get("/admin/ladder/retrynotice/").content.decode()

    assert "Provider overloaded" in page and ">Retired<" in page
    assert "Cancelled or stopped by a viewer" in page and f"loop {retired.loop_id}" in page


@pytest.mark.parametrize(
    ("query", "listed"),
    [
        ("state=retired", True),
        ("state=live", False),
        ("provider=Mock", True),
        ("provider=Elsewhere", False),
        ("retired_reason__exact=cancelled", True),
        ("retired_reason__exact=exhausted", False),
    ],
)
def test_notices_filter_by_state_provider_and_reason(staff, retired, query, listed):
    page = staff.get(f"/admin/ladder/retrynotice/?{query}").content.decode()
    assert (f"/admin/ladder/retrynotice/{retired.pk}/change/" in page) is listed


def test_notices_filter_by_session_and_date(staff, retired, owner, target):
    other = SessionFactory(owner=owner, target=target, title="Another session")
    live = waiting_session(session=other)
    today = timezone.localdate().isoformat()
    by_session = staff.get(f"/admin/ladder/retrynotice/?session__id__exact={other.pk}")
    by_date = staff.get(f"/admin/ladder/retrynotice/?created_at__gte={today}")
    before = staff.get("/admin/ladder/retrynotice/?created_at__lt=2000-01-01")

    change = "/admin/ladder/retrynotice/{}/change/"
    assert change.format(live.pk) in by_session.content.decode()
    assert change.format(retired.pk) not in by_session.content.decode()
    assert change.format(retired.pk) in by_date.content.decode()
    assert change.format(retired.pk) not in before.content.decode()


def test_wait_times_read_as_durations_not_raw_floats(staff, session):
    generation = PromptGeneration.objects.create(session=session, number=9, state="failed")
    AttemptRecord.objects.create(
        session=session, generation=generation, attempt=1, target="Mock", code="overloaded",
        decision="retry", wait_s=9.301869474913463, ttft_ms=1234,
    )  # fmt: skip

    page = staff.get("/admin/ladder/attemptrecord/").content.decode()

    assert "9.301869474913463" not in page
    assert ">9.3 s<" in page and ">1.2 s<" in page


@pytest.mark.parametrize(
    ("seconds", "spoken"),
    [(None, "-"), (0.0123, "12 ms"), (9.301869474913463, "9.3 s"), (42.4, "42 s"),
     (75, "1 min 15 s"), (120, "2 min"), (3725, "1 h 2 min")],
)  # fmt: skip
def test_durations_are_spoken(seconds, spoken):
    assert human_duration(seconds) == spoken


def test_a_loop_that_never_retried_does_not_claim_exhaustion_at_attempt_zero(session):
    generation = PromptGeneration.objects.create(session=session, number=3, state="failed")
    budget = Budget.start(settings=RetrySettings(), clock=FakeClock(), target="Mock")
    loop = RetryLoop.objects.create(
        session=session, generation=generation, state=RetryLoop.State.EXHAUSTED, attempt=0,
        max_attempts=5, budget=budget.to_dict(), target_name="Mock",
    )  # fmt: skip

    assert loop_outcome(loop) == "Handed back before any retry"
    loop.attempt = 5
    assert loop_outcome(loop) == "Gave up after 5 retries of 5"


@pytest.mark.parametrize("model", ["retrynotice", "retryloop", "attemptrecord"])
def test_the_ladders_rows_cannot_be_added_changed_or_deleted(staff, retired, model):
    row = {"retrynotice": retired, "retryloop": retired.loop}.get(model)
    if row is None:
        row = AttemptRecord.objects.create(
            session=retired.session, generation=retired.loop.generation, attempt=1,
            target="Mock", decision="retry",
        )  # fmt: skip
    base = f"/admin/ladder/{model}/"

    assert staff.get(f"{base}add/").status_code == 403
    assert staff.post(f"{base}{row.pk}/change/", {"state": "waiting"}).status_code == 403
    assert staff.post(f"{base}{row.pk}/delete/", {"post": "yes"}).status_code == 403
    assert staff.get(f"{base}{row.pk}/change/").status_code == 200  # still inspectable
    assert type(row).objects.filter(pk=row.pk).exists()
