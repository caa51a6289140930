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


def test_create_api_token_prints_a_token_that_only_its_digest_is_stored_for(owner, capsys):
    call_command("create_api_token", username="owner")
    token = capsys.readouterr().out.strip()
    stored = ApiToken.objects.get(user=owner)
    assert stored.digest == token_digest(token) and token not in stored.digest
    response = Client(headers={"authorization": f"Bearer {token}"}).get("/api/v1/tasks")
    assert response.status_code == 200


def test_a_client_picks_an_operators_target_creates_a_task_and_session_then_prompts(
    owner_api, target, celery_queue
):
    [listed] = owner_api.get("/api/v1/targets").json()
    assert listed == {
        "id": target.pk,
        "name": "Mock",
        "model": "mock-1",
        "permission_policy": target.permission_policy,
    }
    status, task = post(owner_api, "/api/v1/tasks", {"title": "Ship it"})
    assert status == 201 and task["status"] == "open"
    status, session = post(
        owner_api,
        "/api/v1/sessions",
        {"target": listed["id"], "title": "First", "task": task["id"]},
    )
    assert status == 201 and session["task"] == task["id"]

    status, body = post(owner_api, f"/api/v1/sessions/{session['id']}/prompts", {"text": "hello"})
    assert (status, body) == (202, {"generation": 1})
    status, body = post(owner_api, f"/api/v1/sessions/{session['id']}/prompts", {"text": "again"})
    assert status == 409

    detail = owner_api.get(f"/api/v1/sessions/{session['id']}").json()
    assert detail["state"] == "queued" and detail["notice"] is None
    assert detail["queue"] == {"ahead": 0, "reason": "", "generation": 1}
    assert [(m["role"], m["text"], m["generation"]) for m in detail["messages"]] == [
        ("user", "hello", 1)
    ]
    events = owner_api.get(f"/api/v1/sessions/{session['id']}/events?after=1").json()
    assert [e["seq"] for e in events] == list(range(2, detail["last_seq"] + 1))

    status, stopped = post(owner_api, f"/api/v1/sessions/{session['id']}/stop", {})
    assert (status, stopped) == (200, {"generation": 1, "state": "stopped"})
    listed = owner_api.get("/api/v1/tasks").json()
    assert [t["sessions"] for t in listed] == [[session["id"]]]


def test_a_session_is_created_with_its_own_task_when_none_is_named(owner_api, target):
    status, body = post(owner_api, "/api/v1/sessions", {"target": target.pk, "title": "Solo"})
    assert status == 201
    assert Task.objects.get(pk=body["task"]).title == "Solo"


def test_foreign_and_unknown_sessions_get_the_same_404(session, stranger_api):
    paths = ["/api/v1/sessions/{}", "/api/v1/sessions/{}/events?after=0"]
    for path in paths:
        foreign = stranger_api.get(path.format(session.pk))
        unknown = stranger_api.get(path.format(session.pk + 10_000))
        assert foreign.status_code == unknown.status_code == 404
        assert foreign.content == unknown.content
    for action, body in [("prompts", {"text": "hi"}), ("stop", {})]:
        foreign = post(stranger_api, f"/api/v1/sessions/{session.pk}/{action}", body)
        unknown = post(stranger_api, f"/api/v1/sessions/{session.pk + 10_000}/{action}", body)
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
def test_bad_prompts_get_field_errors(session, owner_api, settings, body, field):
    settings.KANDEV_MAX_PROMPT_CHARS = 30
    status, response = post(owner_api, f"/api/v1/sessions/{session.pk}/prompts", body)
    assert status == 422
    assert field in field_errors(response)
    assert not PromptGeneration.objects.exists()


def test_a_session_naming_an_unknown_or_foreign_target_or_task_gets_404_saying_which(
    owner_api, stranger, target
):
    from sessions_app.services import task_create

    bobs = task_create(owner=stranger, title="Bob's")
    status, body = post(owner_api, "/api/v1/sessions", {"target": 999_999, "title": "x"})
    assert (status, body) == (404, {"detail": "No such target."})
    status, body = post(
        owner_api, "/api/v1/sessions", {"target": target.pk, "title": "x", "task": bobs.pk}
    )
    assert (status, body) == (404, {"detail": "No such task."})
    status, body = post(owner_api, "/api/v1/sessions", {"target": "abc", "title": "x"})
    assert (status, field_errors(body)) == (422, {"target"})
    assert not Session.objects.exists()


def test_an_oversized_body_gets_a_clear_413(session, owner_api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    status, body = post(owner_api, f"/api/v1/sessions/{session.pk}/prompts", {"text": "x" * 2000})
    assert status == 413
    assert body == {"detail": "Request body is too large."}


def test_malformed_json_is_refused_without_a_server_error(session, owner_api):
    response = owner_api.post(
        f"/api/v1/sessions/{session.pk}/prompts", data="{not json", content_type="application/json"
    )
    assert 400 <= response.status_code < 500


def test_the_openapi_document_is_served_without_a_token():
    response = Client().get("/api/openapi.json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    assert "/api/v1/sessions/{session_id}/prompts" in paths
    assert "/api/v1/targets" in paths


def test_a_task_is_renamed_archived_and_brought_back_over_the_api(owner_api, session):
    path = f"/api/v1/tasks/{session.task_id}"

    renamed = owner_api.patch(path, {"title": "  Calm  retries "}, content_type="application/json")
    archived = owner_api.patch(path, {"archived": True}, content_type="application/json")

    assert renamed.status_code == 200 and renamed.json()["title"] == "Calm retries"
    assert archived.json()["archived"] is True
    back = owner_api.patch(path, {"archived": False}, content_type="application/json")
    assert back.json()["archived"] is False
    assert Task.objects.get(pk=session.task_id).title == "Calm retries"


def test_a_foreign_task_patch_is_the_same_404_as_an_unknown_one(stranger_api, session):
    foreign = stranger_api.patch(
        f"/api/v1/tasks/{session.task_id}", {"title": "Mine"}, content_type="application/json"
    )
    unknown = stranger_api.patch(
        f"/api/v1/tasks/{session.task_id + 999}", {"title": "Mine"}, content_type="application/json"
    )
    assert foreign.status_code == unknown.status_code == 404
    assert foreign.json() == unknown.json()
    assert Task.objects.get(pk=session.task_id).title == session.task.title


@pytest.mark.parametrize("body", [{"title": ""}, {"title": "x" * 201}, {"archived": "later"}])
def test_a_bad_task_patch_is_a_422_and_changes_nothing(owner_api, session, body):
    response = owner_api.patch(
        f"/api/v1/tasks/{session.task_id}", body, content_type="application/json"
    )
    assert response.status_code == 422
    task = Task.objects.get(pk=session.task_id)
    assert (task.title, task.archived_at) == (session.task.title, None)


def test_a_task_is_marked_done_and_reopened_over_the_api(owner_api, session):
    path = f"/api/v1/tasks/{session.task_id}"

    done = owner_api.patch(path, {"status": "done"}, content_type="application/json")

    assert done.status_code == 200 and done.json()["status"] == "done"
    assert Task.objects.get(pk=session.task_id).status == Task.Status.DONE
    # Reopened, it shows what its sessions say again (an idle one: open).
    reopened = owner_api.patch(path, {"status": "open"}, content_type="application/json")
    assert reopened.status_code == 200 and reopened.json()["status"] == "open"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"status": "in_progress"}, "status"),  # projected from its sessions, not set
        ({"status": "finished"}, "status"),
        ({"title": "Kept", "colour": "red"}, "colour"),  # a field the API would ignore
        ({"done": True}, "done"),
    ],
)
def test_a_task_patch_naming_a_field_it_cannot_apply_is_refused(owner_api, session, body, field):
    response = owner_api.patch(
        f"/api/v1/tasks/{session.task_id}", body, content_type="application/json"
    )
    assert response.status_code == 422
    assert field in field_errors(response.json())
    task = Task.objects.get(pk=session.task_id)
    assert (task.title, task.status) == (session.task.title, Task.Status.OPEN)


def test_any_body_with_an_unknown_field_is_refused_naming_it(owner_api, target):
    status, response = post(owner_api, "/api/v1/tasks", {"title": "Ship it", "priority": 1})
    assert status == 422 and field_errors(response) == {"priority"}
    assert not Task.objects.filter(title="Ship it").exists()
