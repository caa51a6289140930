"""Deciding over the API and the page's button: the first answer wins, a second is 409, an option
the agent did not offer is 422, and another session's or person's approval is 404."""

from __future__ import annotations

import pytest
from django.test import Client

from sessions_app.api_auth import api_token_create
from sessions_app.approvals.models import Approval
from sessions_app.approvals.services import approval_request
from sessions_app.services import generation_claim, prompt_submit
from tests.support.factories import SessionFactory

pytestmark = pytest.mark.django_db(transaction=True)

OPTIONS = [
    {"option_id": "yes", "name": "Allow once", "kind": "allow_once"},
    {"option_id": "no", "name": "Reject", "kind": "reject_once"},
]


def pending(session, user) -> Approval:
    generation = generation_claim(
        generation_id=prompt_submit(session=session, user=user, text="run it").pk
    )
    return approval_request(
        generation=generation,
        tool_call_id="call-1",
        kind="execute",
        title="make test",
        command="make test",
        paths=[],
        diff=None,
        options=OPTIONS,
    )


def api(user) -> Client:
    return Client(headers={"authorization": f"Bearer {api_token_create(user=user)}"})


def decide_url(approval: Approval, session_id: int | None = None) -> str:
    session_id = session_id or approval.session_id
    return f"/api/v1/sessions/{session_id}/approvals/{approval.pk}/decide"


def test_it_decides_over_the_api_once_and_answers_409_to_the_second(owner, session):
    approval = pending(session, owner)
    client = api(owner)

    first = client.post(decide_url(approval), {"option_id": "no"}, content_type="application/json")
    second = client.post(
        decide_url(approval), {"option_id": "yes"}, content_type="application/json"
    )

    assert first.status_code == 200
    assert first.json() == {
        "id": approval.pk, "state": "rejected", "option_id": "no", "decided_by": "owner"
    }  # fmt: skip
    assert second.status_code == 409
    approval.refresh_from_db()
    assert (approval.state, approval.option_id) == ("rejected", "no")


def test_it_answers_422_to_an_option_the_agent_did_not_offer(owner, session):
    approval = pending(session, owner)

    response = api(owner).post(
        decide_url(approval), {"option_id": "always"}, content_type="application/json"
    )

    assert response.status_code == 422
    approval.refresh_from_db()
    assert approval.state == Approval.State.PENDING


def test_it_answers_404_for_a_strangers_approval_and_for_another_sessions_path(
    owner, stranger, session
):
    approval = pending(session, owner)
    other = SessionFactory(owner=owner, target=session.target)

    as_stranger = api(stranger).post(
        decide_url(approval), {"option_id": "yes"}, content_type="application/json"
    )
    wrong_path = api(owner).post(
        decide_url(approval, other.pk), {"option_id": "yes"}, content_type="application/json"
    )

    assert (as_stranger.status_code, wrong_path.status_code) == (404, 404)
    approval.refresh_from_db()
    assert approval.state == Approval.State.PENDING


def test_the_cards_button_allows_and_a_second_press_is_refused_with_409(owner, session):
    approval = pending(session, owner)
    client = Client()
    client.force_login(owner)
    url = f"/sessions/{session.pk}/approvals/decide/"

    first = client.post(url, {"approval": approval.pk, "option": "yes"}, HTTP_HX_REQUEST="true")
    second = client.post(url, {"approval": approval.pk, "option": "no"}, HTTP_HX_REQUEST="true")

    assert first.status_code < 300
    assert second.status_code == 409
    approval.refresh_from_db()
    assert (approval.state, approval.decided_by) == (Approval.State.ALLOWED, owner)


def test_the_cards_button_answers_404_for_a_foreign_approval(owner, stranger, session):
    approval = pending(session, owner)
    client = Client()
    client.force_login(stranger)

    response = client.post(
        f"/sessions/{session.pk}/approvals/decide/", {"approval": approval.pk, "option": "yes"}
    )

    assert response.status_code == 404
    approval.refresh_from_db()
    assert approval.state == Approval.State.PENDING
