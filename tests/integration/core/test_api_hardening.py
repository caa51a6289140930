"""Input the database cannot store or a person could be fooled by is refused with a clear 422 on
the field, in JSON, and nothing is written: NUL bytes and lone surrogates in any text field,
control and bidirectional-override characters in names and titles. Targets are the operator's
(POST /api/v1/targets is always 403), so their fields are checked where staff write them."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from sessions_app.errors import InvalidInput
from sessions_app.models import Message, PromptGeneration, ProviderTarget, Session, Task
from sessions_app.services import target_create

pytestmark = pytest.mark.django_db


def post_raw(client: Client, path: str, raw_json: str):
    """Post JSON text as it is: a lone surrogate only exists as a "\\ud800" escape."""
    return client.post(path, data=raw_json.encode(), content_type="application/json")


def text_fields(session_pk: int, target_pk: int) -> list[tuple[str, dict, str]]:
    """(path, a valid body, the text field to spoil) for every text field the API takes."""
    return [
        ("/api/v1/tasks", {"title": "Ship it"}, "title"),
        ("/api/v1/sessions", {"target": target_pk, "title": "Ship it"}, "title"),
        (f"/api/v1/sessions/{session_pk}/prompts", {"text": "hello"}, "text"),
    ]


# Every text field of a target, with a valid operator's target around it.
TARGET = {"name": "Probe", "kind": "anthropic", "model": "m", "base_url": "http://127.0.0.1:9"}
TARGET_FIELDS = [
    (TARGET, "name"),
    (TARGET, "base_url"),
    (TARGET, "model"),
    ({**TARGET, "api_key_env": "ANTHROPIC_API_KEY"}, "api_key_env"),
    ({"name": "Probe", "kind": "acp", "agent_kind": "mock"}, "agent_kind"),
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


@pytest.mark.parametrize("case", range(3))
def test_a_nul_byte_in_any_text_field_is_a_field_error_not_a_500(owner_api, session, case):
    path, body, field = text_fields(session.pk, session.target_id)[case]
    before = stored_counts()

    response = post_raw(owner_api, path, json.dumps({**body, field: "in\x00side"}))

    says = "NUL" if field == "text" else "control"
    assert_field_refused(response, field, says=says)
    assert stored_counts() == before


@pytest.mark.parametrize("case", range(3))
def test_a_lone_surrogate_in_any_text_field_is_a_field_error_not_a_500(owner_api, session, case):
    path, body, field = text_fields(session.pk, session.target_id)[case]
    before = stored_counts()
    raw = json.dumps({**body, field: "PLACEHOLDER"}).replace("PLACEHOLDER", "half \\ud800 pair")

    response = post_raw(owner_api, path, raw)

    assert_field_refused(response, field, says="lone surrogate")
    assert stored_counts() == before


@pytest.mark.parametrize(
    "title",
    ["Invoice\u202efdp.exe", "\u2066hidden\u2069", "two\nlines", "bell\x07", "\ufeffBOM", "\x85"],
)
def test_titles_with_control_or_bidi_override_characters_are_refused(owner_api, target, title):
    before = stored_counts()
    for path, body in [
        ("/api/v1/tasks", {"title": title}),
        ("/api/v1/sessions", {"target": target.pk, "title": title}),
    ]:
        response = post_raw(owner_api, path, json.dumps(body))
        assert_field_refused(response, "title", says="bidirectional-override")
    with pytest.raises(InvalidInput, match="bidirectional-override") as refused:
        target_create(name=title, kind="mock", model="mock-1")
    assert refused.value.field == "name"
    assert stored_counts() == before


@pytest.mark.parametrize(("body", "field"), TARGET_FIELDS)
@pytest.mark.parametrize(
    ("spoiled", "says"), [("in\x00side", "control"), ("half \ud800 pair", "lone surrogate")]
)
def test_a_target_field_with_nul_or_a_lone_surrogate_is_refused_where_staff_save_it(
    body, field, spoiled, says
):
    before = stored_counts()

    with pytest.raises(InvalidInput, match=says) as refused:
        target_create(**{**body, field: spoiled})

    assert refused.value.field == field
    assert stored_counts() == before


def test_a_target_posted_to_the_api_with_a_nul_byte_is_still_just_forbidden(owner_api):
    body = json.dumps({**TARGET, "name": "in\x00side"})

    response = post_raw(owner_api, "/api/v1/targets", body)

    assert response.status_code == 403
    assert ProviderTarget.objects.count() == 0


def test_titles_in_any_script_are_still_fine(owner_api, target):
    for title in ["Café ☕", "שלום עולם", "計画を立てる"]:
        response = post_raw(owner_api, "/api/v1/tasks", json.dumps({"title": title}))
        assert response.status_code == 201 and response.json()["title"] == title


def test_a_prompt_keeps_tabs_newlines_and_any_script(owner_api, session, celery_queue):
    text = "def f():\n\treturn 1  # 計画 \u202e is fine in code"
    response = post_raw(
        owner_api, f"/api/v1/sessions/{session.pk}/prompts", json.dumps({"text": text})
    )
    assert response.status_code == 202
    assert Message.objects.get(session=session).text == text


@pytest.mark.parametrize("body", ['"AAA"', "[]", "5", "null", "true"])
def test_a_body_that_is_not_a_json_object_is_refused(owner_api, body):
    response = post_raw(owner_api, "/api/v1/tasks", body)
    assert response.status_code == 422
    assert not Task.objects.exists()
