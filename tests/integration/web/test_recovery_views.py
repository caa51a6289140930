"""The retry banner's Cancel and the recovery card's Resume / Start fresh, as pages answer them."""

from __future__ import annotations

import pytest
from django.test import Client

from sessions_app.ladder.models import RetryLoop, RetryNotice
from sessions_app.models import PromptGeneration, Session
from sessions_app.selectors import session_snapshot
from tests.integration.web.retry_state import waiting_session

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
UNKNOWN_ID = 987_654


def logged_in(user, *, enforce_csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=enforce_csrf)
    client.force_login(user)
    return client


def answer(response) -> tuple[int, bytes, str | None]:
    return response.status_code, response.content, response.get("Content-Type")


def test_cancel_retires_the_banner_and_offers_resume_and_start_fresh(owner, session):
    waiting_session(session=session)
    response = logged_in(owner).post(f"/sessions/{session.pk}/cancel-retry/", **HTMX)

    assert response.status_code == 204
    assert not RetryNotice.objects.live().filter(session=session).exists()
    assert RetryLoop.objects.get(session=session).state == RetryLoop.State.CANCELLED
    snapshot = session_snapshot(session=session)
    assert snapshot["state"] == Session.State.NEEDS_ATTENTION
    assert snapshot["recovery_actions"] == ["resume", "fresh"]
    assert snapshot["explanation"].startswith("Automatic retry was cancelled")


def test_cancel_answers_a_foreign_an_unknown_and_a_loopless_session_exactly_alike(
    owner, stranger, session, target
):
    from sessions_app.services import session_create

    waiting_session(session=session)
    quiet = session_create(owner=owner, target=target, title="Nothing to cancel")
    foreign = logged_in(stranger).post(f"/sessions/{session.pk}/cancel-retry/", **HTMX)
    unknown = logged_in(stranger).post(f"/sessions/{UNKNOWN_ID}/cancel-retry/", **HTMX)
    loopless = logged_in(owner).post(f"/sessions/{quiet.pk}/cancel-retry/", **HTMX)

    assert answer(foreign) == answer(unknown) == answer(loopless)
    # ...and the stranger's press changed nothing.
    assert RetryLoop.objects.get(session=session).state == RetryLoop.State.WAITING
    assert RetryNotice.objects.live().filter(session=session).count() == 1


def test_cancel_without_htmx_goes_back_to_the_session_page(owner, session):
    waiting_session(session=session)
    response = logged_in(owner).post(f"/sessions/{session.pk}/cancel-retry/")
    assert response.status_code == 302 and response["Location"] == f"/sessions/{session.pk}/"
    assert not RetryNotice.objects.live().filter(session=session).exists()


@pytest.mark.parametrize("action", ["cancel-retry", "recover"])
def test_recovery_actions_need_a_login_and_a_post(client, owner, session, action):
    waiting_session(session=session)
    response = client.post(f"/sessions/{session.pk}/{action}/", {"action": "resume"}, **HTMX)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert logged_in(owner).get(f"/sessions/{session.pk}/{action}/").status_code == 405
    assert RetryNotice.objects.live().filter(session=session).count() == 1


def test_cancel_is_refused_without_a_csrf_token_and_accepted_with_one(owner, session):
    waiting_session(session=session)
    browser = logged_in(owner, enforce_csrf=True)
    assert browser.post(f"/sessions/{session.pk}/cancel-retry/", **HTMX).status_code == 403
    assert RetryNotice.objects.live().filter(session=session).count() == 1

    page = browser.get(f"/sessions/{session.pk}/")
    token = page.cookies["csrftoken"].value
    response = browser.post(f"/sessions/{session.pk}/cancel-retry/", HTTP_X_CSRFTOKEN=token, **HTMX)
    assert response.status_code == 204
    assert not RetryNotice.objects.live().filter(session=session).exists()


def cancelled(owner, session) -> None:
    waiting_session(session=session)
    logged_in(owner).post(f"/sessions/{session.pk}/cancel-retry/", **HTMX)


@pytest.mark.parametrize("action", ["resume", "fresh"])
def test_recover_starts_a_new_run_of_the_failed_turn(owner, session, action):
    cancelled(owner, session)
    response = logged_in(owner).post(f"/sessions/{session.pk}/recover/", {"action": action}, **HTMX)

    # No body: the button is swapped away by the websocket, so an out-of-band swap answered to
    # it would find no target (htmx:oobErrorNoTarget in the console).
    assert response.status_code == 204 and response.content == b""
    latest = PromptGeneration.objects.filter(session=session).order_by("-number").first()
    assert (latest.number, latest.state, latest.mode) == (2, PromptGeneration.State.QUEUED, action)
    session.refresh_from_db()
    assert session.state == Session.State.QUEUED


def test_recover_on_a_foreign_session_is_the_same_404_as_an_unknown_one(owner, stranger, session):
    cancelled(owner, session)
    foreign = logged_in(stranger).post(f"/sessions/{session.pk}/recover/", {"action": "resume"})
    unknown = logged_in(stranger).post(f"/sessions/{UNKNOWN_ID}/recover/", {"action": "resume"})
    assert foreign.status_code == 404
    assert answer(foreign) == answer(unknown)
    assert PromptGeneration.objects.filter(session=session).count() == 1


def test_a_second_resume_while_the_first_runs_gets_a_calm_409(owner, session):
    cancelled(owner, session)
    client = logged_in(owner)
    client.post(f"/sessions/{session.pk}/recover/", {"action": "resume"}, **HTMX)
    again = client.post(f"/sessions/{session.pk}/recover/", {"action": "resume"}, **HTMX)

    assert again.status_code == 409
    assert "already working on this session" in again.content.decode()
    assert PromptGeneration.objects.filter(session=session).count() == 2


def test_an_unknown_recovery_action_is_refused_with_a_message(owner, session):
    cancelled(owner, session)
    response = logged_in(owner).post(
        f"/sessions/{session.pk}/recover/", {"action": "reboot"}, **HTMX
    )
    assert response.status_code == 422
    assert "must be one of: resume, fresh" in response.content.decode()
