"""The HTML forms refuse what the API refuses (NUL, control and bidi-override characters in
titles, NUL in prompts) with a clear form error and status 422, never a 500."""

from __future__ import annotations

import pytest
from django.test import Client

from sessions_app.models import PromptGeneration, Session, Task

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def owner_client(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


@pytest.mark.parametrize(
    ("title", "says"),
    [
        ("Invoice\u202efdp.exe", "Title must not contain control or bidirectional-override"),
        ("bell\x07", "Title must not contain control or bidirectional-override"),
        ("in\x00side", "Null characters are not allowed."),
    ],
)
def test_a_spoofing_or_unstorable_session_title_is_a_form_error(owner_client, target, title, says):
    response = owner_client.post("/sessions/new/", {"title": title, "target": target.pk})

    assert response.status_code == 422
    assert says in response.content.decode()
    assert not Session.objects.exists() and not Task.objects.exists()


def test_a_nul_byte_in_a_prompt_is_a_composer_error(owner_client, session):
    response = owner_client.post(f"/sessions/{session.pk}/prompts/", {"text": "a\x00b"}, **HTMX)

    assert response.status_code == 422
    assert "Message must not contain NUL characters (U+0000)." in response.content.decode()
    assert not PromptGeneration.objects.exists()


def test_a_nul_byte_in_the_login_form_is_refused_like_a_wrong_password(client, owner):
    response = client.post("/accounts/login/", {"username": "own\x00er", "password": "x"})
    assert response.status_code == 200
    assert "did not match" in response.content.decode()
