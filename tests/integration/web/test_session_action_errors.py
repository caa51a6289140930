"""Every domain error a session action raises is answered one way, with the status the API's
table gives it: over htmx the composer's error line, on a plain form post the session page with
the same line and the typed text kept. Regenerate stands in for every action (they share
session_views.session_action); its service is made to raise each error in turn."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.test import Client

from recovery import wording
from sessions_app import session_views
from sessions_app.errors import (
    CapReached,
    DomainError,
    GenerationActive,
    InvalidInput,
    RetryWaiting,
    SessionNotFound,
    StateConflict,
    TokenNotFound,
    UnknownReference,
    http_status,
)

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
COMPOSER_ERROR = re.compile(
    r'<p id="composer-error" class="form-error" role="alert"[^>]*>(.*?)</p>'
)
CAP = CapReached(
    cap="prompt_rate", limit=30, retry_after_s=2.2, message="You have sent 30 prompts this minute."
)

REFUSALS = [
    pytest.param(
        InvalidInput("text", "is too long"),
        422,
        "Cannot regenerate: is too long.",
        id="invalid-input",
    ),
    pytest.param(
        UnknownReference("target", "no such target"),
        422,
        "Cannot regenerate: no such target.",
        id="unknown-reference",
    ),
    pytest.param(
        StateConflict("text", "nothing to answer yet"),
        422,
        "Cannot regenerate: nothing to answer yet.",
        id="state-conflict",
    ),
    pytest.param(GenerationActive(1), 409, wording.STILL_WORKING, id="generation-active"),
    pytest.param(RetryWaiting(1), 409, wording.RETRY_PENDING, id="retry-waiting"),
    pytest.param(CAP, 429, CAP.message, id="cap-reached"),
]


@pytest.fixture
def owner_client(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def regenerate_raises(monkeypatch):
    def make(error: DomainError) -> None:
        def refuse(**_kwargs: object) -> None:
            raise error

        monkeypatch.setattr(session_views, "answer_regenerate", refuse)

    return make


def composer_line(response) -> str:
    match = COMPOSER_ERROR.search(response.content.decode())
    assert match, "no composer error line in the answer"
    return unescape(match[1])


@pytest.mark.parametrize(("error", "status", "message"), REFUSALS)
def test_over_htmx_each_refusal_is_the_composer_line_with_its_status(
    owner_client, session, regenerate_raises, error, status, message
):
    regenerate_raises(error)
    response = owner_client.post(f"/sessions/{session.pk}/regenerate/", **HTMX)
    assert response.status_code == status
    assert 'hx-swap-oob="true"' in response.content.decode()
    assert composer_line(response) == message


@pytest.mark.parametrize(("error", "status", "message"), REFUSALS)
def test_on_a_plain_post_each_refusal_is_the_session_page_with_its_line(
    owner_client, session, regenerate_raises, error, status, message
):
    regenerate_raises(error)
    response = owner_client.post(f"/sessions/{session.pk}/regenerate/")
    assert response.status_code == status
    assert f'<h1 class="session-heading">{session.title}</h1>' in response.content.decode()
    assert composer_line(response) == message


@pytest.mark.parametrize("headers", [HTMX, {}], ids=["htmx", "plain"])
def test_a_cap_refusal_says_when_to_try_again_in_whole_seconds(
    owner_client, session, regenerate_raises, headers
):
    regenerate_raises(CAP)
    response = owner_client.post(f"/sessions/{session.pk}/regenerate/", **headers)
    assert response["Retry-After"] == "3"


@pytest.mark.parametrize("headers", [HTMX, {}], ids=["htmx", "plain"])
def test_other_refusals_carry_no_retry_after(owner_client, session, regenerate_raises, headers):
    regenerate_raises(GenerationActive(session.pk))
    response = owner_client.post(f"/sessions/{session.pk}/regenerate/", **headers)
    assert "Retry-After" not in response


@pytest.mark.parametrize("headers", [HTMX, {}], ids=["htmx", "plain"])
def test_a_session_lost_during_the_action_is_the_same_404_as_an_unknown_one(
    owner_client, session, regenerate_raises, headers
):
    regenerate_raises(SessionNotFound(session.pk))
    lost = owner_client.post(f"/sessions/{session.pk}/regenerate/", **headers)
    unknown = owner_client.post("/sessions/987654/regenerate/", **headers)
    assert lost.status_code == unknown.status_code == 404
    assert lost.content == unknown.content


def test_a_refused_plain_edit_keeps_the_typed_text_in_the_composer(
    owner_client, session, monkeypatch
):
    def refuse(**_kwargs: object) -> None:
        raise CAP

    monkeypatch.setattr(session_views, "prompt_edit", refuse)
    response = owner_client.post(f"/sessions/{session.pk}/edit/", {"text": "my <edit>"})
    assert response.status_code == 429
    assert "my &lt;edit&gt;</textarea>" in response.content.decode()


@pytest.mark.parametrize(
    ("error", "api", "page"),
    [
        (SessionNotFound(1), 404, 404),
        (TokenNotFound(1), 404, 404),
        (InvalidInput("title", "is blank"), 422, 422),
        (UnknownReference("target", "no such target"), 404, 422),
        (StateConflict("title", "is taken"), 409, 422),
        (GenerationActive(1), 409, 409),
        (RetryWaiting(1), 409, 409),
        (CAP, 429, 429),
    ],
)
def test_the_api_and_the_pages_read_one_status_table(error, api, page):
    assert http_status(error) == api
    assert http_status(error, on_page=True) == page
