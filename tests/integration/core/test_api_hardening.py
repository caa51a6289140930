"""Input the database cannot store or a person could be fooled by is refused with a clear 422 on
the field, in JSON, and nothing is written: NUL bytes and lone surrogates in any text field,
control and bidirectional-override characters in names and titles."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from sessions_app.models import Message, PromptGeneration, ProviderTarget, Session, Task

pytestmark = pytest.mark.django_db


def post_raw(client: Client, path: str, raw_json: str):
    """Post JSON text as it is: a lone surrogate only exists as a "\\ud800" escape."""
    return client.post(path, data=raw_json.encode(), content_type="application/json")


def text_fields(session_pk: int, target_pk: int) -> list[tuple[str, dict, str]]:
    """(path, a valid body, the text field to spoil) for every text field the API takes."""
    target = {"name": "Probe", "kind": "anthropic", "model": "m", "base_url": "http://127.0.0.1:9"}
    return [
        ("/api/v1/tasks", {"title": "Ship it"}, "title"),
        ("/api/v1/sessions", {"target": target_pk, "title": "Ship it"}, "title"),
        (f"/api/v1/sessions/{session_pk}/prompts", {"text": "hello"}, "text"),
        ("/api/v1/targets", target, "name"),
        ("/api/v1/targets", target, "base_url"),
        ("/api/v1/targets", target, "model"),
        ("/api/v1/targets", {**target, "api_key_env": "KEY"}, "api_key_env"),
        ("/api/v1/targets", {"name": "Probe", "kind": "acp", "command": "agent"}, "command"),
    ]


def stored_counts() -> tuple[int, ...]:
    return (
        Task.objects.count(),
        Session.objects.count(),
        Message.objects.count(),
        PromptGeneration.objects.count(),
        ProviderTarget.objects.count(),
    )


def assert_field_refused(response, field: str, *, says: str) -> None:
    assert response.status_code == 422, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    errors = [e for e in response.json()["detail"] if e["loc"][-1] == field]
    assert errors, response.json()
    assert says in errors[0]["msg"]


@pytest.mark.parametrize("case", range(8))
def test_a_nul_byte_in_any_text_field_is_a_field_error_not_a_500(alice_api, session, case):
    path, body, field = text_fields(session.pk, session.target_id)[case]
    before = stored_counts()

    response = post_raw(alice_api, path, json.dumps({**body, field: "in\x00side"}))

    says = "NUL" if field == "text" else "control"
    assert_field_refused(response, field, says=says)
    assert stored_counts() == before


@pytest.mark.parametrize("case", range(8))
def test_a_lone_surrogate_in_any_text_field_is_a_field_error_not_a_500(alice_api, session, case):
    path, body, field = text_fields(session.pk, session.target_id)[case]
    before = stored_counts()
    raw = json.dumps({**body, field: "PLACEHOLDER"}).replace("PLACEHOLDER", "half \\ud800 pair")

    response = post_raw(alice_api, path, raw)

    assert_field_refused(response, field, says="lone surrogate")
    assert stored_counts() == before


@pytest.mark.parametrize(
    "title",
    ["Invoice\u202efdp.exe", "\u2066hidden\u2069", "two\nlines", "bell\x07", "\ufeffBOM", "\x85"],
)
def test_titles_with_control_or_bidi_override_characters_are_refused(alice_api, mock_target, title):
    before = stored_counts()
    for path, body in [
        ("/api/v1/tasks", {"title": title}),
        ("/api/v1/sessions", {"target": mock_target.pk, "title": title}),
        ("/api/v1/targets", {"name": title, "kind": "mock"}),
    ]:
        response = post_raw(alice_api, path, json.dumps(body))
        field = "name" if path.endswith("targets") else "title"
        assert_field_refused(response, field, says="bidirectional-override")
    assert stored_counts() == before


def test_titles_in_any_script_are_still_fine(alice_api, mock_target):
    for title in ["Café ☕", "שלום עולם", "計画を立てる"]:
        response = post_raw(alice_api, "/api/v1/tasks", json.dumps({"title": title}))
        assert response.status_code == 201 and response.json()["title"] == title


def test_a_prompt_keeps_tabs_newlines_and_any_script(alice_api, session, celery_queue):
    text = "def f():\n\treturn 1  # 計画 \u202e is fine in code"
    response = post_raw(
        alice_api, f"/api/v1/sessions/{session.pk}/prompts", json.dumps({"text": text})
    )
    assert response.status_code == 202
    assert Message.objects.get(session=session).text == text


def test_ordinary_users_see_only_target_names_and_models(alice_api, alice, db):
    from django.test import Client

    ProviderTarget.objects.create(
        name="Claude",
        kind=ProviderTarget.Kind.ACP,
        model="sonnet",
        command="/opt/agents/bin/claude-acp --config /srv/kandev/agent.toml",
        api_key_env="ANTHROPIC_API_KEY",
        base_url="http://127.0.0.1:4000/internal",
    )

    response = alice_api.get("/api/v1/targets")

    assert response.status_code == 200
    assert [set(t) for t in response.json()] == [{"id", "name", "model"}]
    assert response.json()[0]["name"] == "Claude" and response.json()[0]["model"] == "sonnet"
    for secretish in ["/opt/agents", "agent.toml", "ANTHROPIC_API_KEY", "/internal"]:
        assert secretish not in response.content.decode()
    browser = Client()
    browser.force_login(alice)
    board = browser.get("/").content.decode()
    assert "Claude" in board and "/opt/agents" not in board and "ANTHROPIC_API_KEY" not in board


@pytest.mark.parametrize("body", ['"AAA"', "[]", "5", "null", "true"])
def test_a_body_that_is_not_a_json_object_is_refused(alice_api, body):
    response = post_raw(alice_api, "/api/v1/tasks", body)
    assert response.status_code == 422
    assert not Task.objects.exists()
