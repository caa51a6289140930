"""The JSON API: auth, the identical 404, field errors, 413, OpenAPI."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.test import Client

from sessions_app.api_auth import token_digest
from sessions_app.models import ApiToken, PromptGeneration, Session, Task

pytestmark = pytest.mark.django_db


def post(client: Client, path: str, body) -> tuple[int, dict]:
    response = client.post(path, data=json.dumps(body), content_type="application/json")
    return response.status_code, response.json()


def test_every_endpoint_requires_a_token(session):
    anonymous = Client()
    for path in [
        "/api/v1/targets",
        "/api/v1/tasks",
        f"/api/v1/sessions/{session.pk}",
        f"/api/v1/sessions/{session.pk}/events",
    ]:
        assert anonymous.get(path).status_code == 401
    bad = Client(headers={"authorization": "Bearer kdv_not-a-real-token"})
    assert bad.get("/api/v1/tasks").status_code == 401
    status, _ = post(anonymous, f"/api/v1/sessions/{session.pk}/prompts", {"text": "hi"})
    assert status == 401


def test_create_api_token_prints_a_token_that_only_its_digest_is_stored_for(alice, capsys):
    call_command("create_api_token", username="alice")
    token = capsys.readouterr().out.strip()
    stored = ApiToken.objects.get(user=alice)
    assert stored.digest == token_digest(token) and token not in stored.digest
    response = Client(headers={"authorization": f"Bearer {token}"}).get("/api/v1/tasks")
    assert response.status_code == 200


def test_a_client_creates_a_target_task_and_session_then_prompts(alice_api, celery_queue):
    status, target = post(alice_api, "/api/v1/targets", {"name": "Mock", "kind": "mock"})
    assert status == 201 and target["fallbacks"] == []
    status, task = post(alice_api, "/api/v1/tasks", {"title": "Ship it"})
    assert status == 201 and task["status"] == "open"
    status, session = post(
        alice_api,
        "/api/v1/sessions",
        {"target": target["id"], "title": "First", "task": task["id"]},
    )
    assert status == 201 and session["task"] == task["id"]

    status, body = post(alice_api, f"/api/v1/sessions/{session['id']}/prompts", {"text": "hello"})
    assert (status, body) == (202, {"generation": 1})
    status, body = post(alice_api, f"/api/v1/sessions/{session['id']}/prompts", {"text": "again"})
    assert status == 409

    detail = alice_api.get(f"/api/v1/sessions/{session['id']}").json()
    assert detail["state"] == "running" and detail["notice"] is None
    assert [(m["role"], m["text"], m["generation"]) for m in detail["messages"]] == [
        ("user", "hello", 1)
    ]
    events = alice_api.get(f"/api/v1/sessions/{session['id']}/events?after=1").json()
    assert [e["seq"] for e in events] == list(range(2, detail["last_seq"] + 1))

    status, stopped = post(alice_api, f"/api/v1/sessions/{session['id']}/stop", {})
    assert (status, stopped) == (200, {"generation": 1, "state": "stopped"})
    listed = alice_api.get("/api/v1/tasks").json()
    assert [t["sessions"] for t in listed] == [[session["id"]]]


def test_a_session_is_created_with_its_own_task_when_none_is_named(alice_api, mock_target):
    status, body = post(alice_api, "/api/v1/sessions", {"target": mock_target.pk, "title": "Solo"})
    assert status == 201
    assert Task.objects.get(pk=body["task"]).title == "Solo"


def test_foreign_and_unknown_sessions_get_the_same_404(session, bob_api):
    paths = ["/api/v1/sessions/{}", "/api/v1/sessions/{}/events?after=0"]
    for path in paths:
        foreign = bob_api.get(path.format(session.pk))
        unknown = bob_api.get(path.format(session.pk + 10_000))
        assert foreign.status_code == unknown.status_code == 404
        assert foreign.content == unknown.content
    for action, body in [("prompts", {"text": "hi"}), ("stop", {})]:
        foreign = post(bob_api, f"/api/v1/sessions/{session.pk}/{action}", body)
        unknown = post(bob_api, f"/api/v1/sessions/{session.pk + 10_000}/{action}", body)
        assert foreign == unknown and foreign[0] == 404
    assert not PromptGeneration.objects.exists()


def field_errors(body: dict) -> set[str]:
    return {error["loc"][-1] for error in body["detail"]}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"text": ""}, "text"),
        ({"text": "  "}, "text"),
        ({"text": "x" * 40}, "text"),
        ({"text": 12}, "text"),
        ({}, "text"),
    ],
)
def test_bad_prompts_get_field_errors(session, alice_api, settings, body, field):
    settings.KANDEV_MAX_PROMPT_CHARS = 30
    status, response = post(alice_api, f"/api/v1/sessions/{session.pk}/prompts", body)
    assert status == 422
    assert field in field_errors(response)
    assert not PromptGeneration.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "X", "kind": "weird"}, "kind"),
        ({"name": "X", "kind": "mock", "fallbacks": "1,2"}, "fallbacks"),
        ({"name": "X", "kind": "mock", "fallbacks": [1, 1]}, "fallbacks"),
        ({"name": "X", "kind": "anthropic"}, "model"),
        ({"name": "X", "kind": "acp", "command": "  "}, "command"),
        (
            {"name": "X", "kind": "anthropic", "model": "m", "api_key_env": "sk-ant-test-000"},
            "api_key_env",
        ),
    ],
)
def test_bad_targets_get_field_errors(alice_api, mock_target, body, field):
    status, response = post(alice_api, "/api/v1/targets", body)
    assert status == 422
    assert field in field_errors(response)


def test_a_target_naming_an_unknown_fallback_is_404_and_a_taken_name_409(alice_api, mock_target):
    # Well formed by the schema, so not 422: what is missing or taken is the database's to say.
    assert post(
        alice_api, "/api/v1/targets", {"name": "X", "kind": "mock", "fallbacks": [424242]}
    ) == (
        404,
        {"detail": "No such target: 424242."},
    )
    assert post(alice_api, "/api/v1/targets", {"name": "Mock", "kind": "mock"}) == (
        409,
        {"detail": "A target with this name already exists."},
    )


def test_a_session_naming_an_unknown_or_foreign_target_or_task_gets_404_saying_which(
    alice_api, bob, mock_target
):
    from sessions_app.services import task_create

    bobs = task_create(owner=bob, title="Bob's")
    status, body = post(alice_api, "/api/v1/sessions", {"target": 999_999, "title": "x"})
    assert (status, body) == (404, {"detail": "No such target."})
    status, body = post(
        alice_api, "/api/v1/sessions", {"target": mock_target.pk, "title": "x", "task": bobs.pk}
    )
    assert (status, body) == (404, {"detail": "No such task."})
    status, body = post(alice_api, "/api/v1/sessions", {"target": "abc", "title": "x"})
    assert (status, field_errors(body)) == (422, {"target"})
    assert not Session.objects.exists()


def test_an_oversized_body_gets_a_clear_413(session, alice_api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    status, body = post(alice_api, f"/api/v1/sessions/{session.pk}/prompts", {"text": "x" * 2000})
    assert status == 413
    assert body == {"detail": "Request body is too large."}


def test_malformed_json_is_refused_without_a_server_error(session, alice_api):
    response = alice_api.post(
        f"/api/v1/sessions/{session.pk}/prompts", data="{not json", content_type="application/json"
    )
    assert 400 <= response.status_code < 500


def test_the_openapi_document_is_served_without_a_token():
    response = Client().get("/api/openapi.json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    assert "/api/v1/sessions/{session_id}/prompts" in paths
    assert "/api/v1/targets" in paths
