"""Pages: login, the board, the session page and the composer's actions."""

from __future__ import annotations

import pytest
from django.test import Client

from sessions_app.models import Message, PromptGeneration, Session
from sessions_app.services import prompt_submit

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def owner_client(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def stranger_client(stranger) -> Client:
    client = Client()
    client.force_login(stranger)
    return client


@pytest.mark.parametrize("path", ["/", "/sessions/1/"])
def test_pages_send_anonymous_visitors_to_the_login_page(client, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")


def test_a_person_can_log_in_with_the_login_form(client, owner):
    owner.set_password("owner-pass-123")
    owner.save()
    page = client.get("/accounts/login/")
    assert page.status_code == 200 and b'name="password"' in page.content
    response = client.post("/accounts/login/", {"username": "owner", "password": "owner-pass-123"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200


def test_the_board_lists_tasks_with_their_sessions_and_state_badges(owner_client, session):
    Session.objects.filter(pk=session.pk).update(state=Session.State.WAITING_RETRY)
    page = owner_client.get("/").content.decode()
    assert session.task.title in page
    assert f'href="/sessions/{session.pk}/"' in page
    assert (
        'class="badge badge--waiting_retry" data-state="waiting_retry">Waiting to retry</span>'
        in page
    )


def test_the_board_shows_only_the_viewers_own_tasks(stranger_client, session):
    page = stranger_client.get("/").content.decode()
    assert session.title not in page


def test_creating_a_session_from_the_board_opens_its_page(owner_client, owner, target):
    response = owner_client.post("/sessions/new/", {"title": "Plan a trip", "target": target.pk})
    created = Session.objects.get(title="Plan a trip")
    assert created.owner == owner and created.task.title == "Plan a trip"
    assert response.status_code == 302 and response["Location"] == f"/sessions/{created.pk}/"


def test_creating_a_session_without_a_title_shows_the_form_again(owner_client, target):
    response = owner_client.post("/sessions/new/", {"title": "", "target": target.pk})
    assert response.status_code == 422 and not Session.objects.exists()


def test_the_session_page_renders_the_transcript_and_live_socket(owner_client, owner, session):
    prompt_submit(session=session, user=owner, text="Tell me about <b>markup</b>")
    page = owner_client.get(f"/sessions/{session.pk}/").content.decode()
    assert "Tell me about &lt;b&gt;markup&lt;/b&gt;" in page and "<b>markup</b>" not in page
    assert f'ws-connect="/ws/sessions/{session.pk}/"' in page
    assert (
        f'id="ws-seq" data-kind="page" data-from="0" data-seq="{Session.objects.get().last_seq}"'
        in page
    )
    assert 'id="notice"' in page and 'id="recovery"' in page
    assert "interactive-widget=resizes-content" in page
    assert ">Stop</button>" in page  # a generation is queued, so Send has become Stop


def test_a_prompt_with_a_script_tag_is_shown_as_text(owner_client, owner, session):
    owner_client.post(f"/sessions/{session.pk}/prompts/", {"text": "<script>alert(1)</script>"})
    page = owner_client.get(f"/sessions/{session.pk}/").content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)" not in page


def test_a_foreign_session_is_the_same_404_as_an_unknown_one(stranger_client, session):
    foreign = stranger_client.get(f"/sessions/{session.pk}/")
    unknown = stranger_client.get(f"/sessions/{session.pk + 10_000}/")
    assert foreign.status_code == unknown.status_code == 404
    assert foreign.content == unknown.content
    foreign_post = stranger_client.post(f"/sessions/{session.pk}/prompts/", {"text": "hi"})
    unknown_post = stranger_client.post(f"/sessions/{session.pk + 10_000}/prompts/", {"text": "hi"})
    assert foreign_post.status_code == unknown_post.status_code == 404
    assert foreign_post.content == unknown_post.content
    assert not Message.objects.exists()


def test_a_member_may_view_and_prompt_a_shared_session(stranger_client, stranger, session):
    session.members.add(stranger)
    assert stranger_client.get(f"/sessions/{session.pk}/").status_code == 200
    response = stranger_client.post(f"/sessions/{session.pk}/prompts/", {"text": "hi"}, **HTMX)
    assert response.status_code == 200
    assert Message.objects.get().text == "hi"


def test_sending_over_htmx_writes_the_prompt_and_clears_the_error_line(owner_client, session):
    response = owner_client.post(f"/sessions/{session.pk}/prompts/", {"text": "hello"}, **HTMX)
    assert response.status_code == 200
    assert response.content.decode() == (
        '<p id="composer-error" class="form-error" role="alert" hx-swap-oob="true"></p>'
    )
    generation = PromptGeneration.objects.get(session=session)
    assert generation.state == PromptGeneration.State.QUEUED
    assert Message.objects.get(generation=generation).text == "hello"


def test_sending_while_the_agent_works_is_refused_with_a_calm_message(owner_client, session):
    owner_client.post(f"/sessions/{session.pk}/prompts/", {"text": "first"}, **HTMX)
    response = owner_client.post(f"/sessions/{session.pk}/prompts/", {"text": "second"}, **HTMX)
    assert response.status_code == 409
    assert "still working" in response.content.decode()
    assert PromptGeneration.objects.count() == 1


@pytest.mark.parametrize("text", ["", "   ", "x" * 40_000])
def test_an_empty_or_oversized_prompt_is_refused(owner_client, session, text, settings):
    settings.KANDEV_MAX_PROMPT_CHARS = 32_000
    response = owner_client.post(f"/sessions/{session.pk}/prompts/", {"text": text}, **HTMX)
    assert response.status_code == 422
    assert 'id="composer-error"' in response.content.decode()
    assert not PromptGeneration.objects.exists()


def test_without_htmx_a_refused_prompt_keeps_the_draft_on_the_page(owner_client, session):
    owner_client.post(f"/sessions/{session.pk}/prompts/", {"text": "first"})
    response = owner_client.post(f"/sessions/{session.pk}/prompts/", {"text": "my <draft>"})
    assert response.status_code == 409
    assert "my &lt;draft&gt;</textarea>" in response.content.decode()


def test_stop_ends_a_queued_generation(owner_client, session):
    owner_client.post(f"/sessions/{session.pk}/prompts/", {"text": "hello"}, **HTMX)
    response = owner_client.post(f"/sessions/{session.pk}/stop/", **HTMX)
    assert response.status_code == 204 and response.content == b""
    generation = PromptGeneration.objects.get(session=session)
    assert generation.state == PromptGeneration.State.STOPPED or generation.stop_requested
