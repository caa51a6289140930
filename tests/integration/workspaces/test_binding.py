"""A task binds to a project only if its creator may use that project; a forbidden project is
answered exactly like an unknown one, on the board's form and in the API."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from sessions_app.api_auth import api_token_create
from sessions_app.models import Task
from sessions_app.workspaces.selectors import task_workspace
from sessions_app.workspaces.services import project_register
from tests.integration.workspaces.conftest import make_repository

pytestmark = pytest.mark.django_db


@pytest.fixture
def theirs(roots, stranger):
    """A project only the stranger may use."""
    return project_register(
        name="theirs", repo_path=str(make_repository(roots / "theirs")), users=[stranger]
    )


def api_post_task(user, project_id: int) -> tuple[int, bytes]:
    client = Client(headers={"authorization": f"Bearer {api_token_create(user=user)}"})
    response = client.post(
        "/api/v1/tasks",
        data=json.dumps({"title": "Bound", "project": project_id}),
        content_type="application/json",
    )
    return response.status_code, response.content


def test_the_api_binds_a_task_to_a_project_its_creator_may_use(owner, project):
    status, body = api_post_task(owner, project.pk)

    assert status == 201
    workspace = task_workspace(task_id=json.loads(body)["id"])
    assert workspace is not None and workspace.project == project
    assert json.loads(body)["project"] == project.pk
    client = Client(headers={"authorization": f"Bearer {api_token_create(user=owner)}"})
    listed = {task["title"]: task["project"] for task in client.get("/api/v1/tasks").json()}
    assert listed["Bound"] == project.pk


def test_the_api_answers_a_forbidden_project_like_an_unknown_one(owner, project, theirs):
    forbidden = api_post_task(owner, theirs.pk)
    unknown = api_post_task(owner, theirs.pk + 1000)

    assert forbidden[0] == unknown[0] == 404
    assert forbidden[1] == unknown[1]
    assert not Task.objects.filter(title="Bound").exists()


def test_the_openapi_document_says_creating_a_task_can_answer_not_found():
    # Clients generated from the document (and the schemathesis run) must expect the 404.
    document = Client().get("/api/openapi.json").json()

    assert "404" in document["paths"]["/api/v1/tasks"]["post"]["responses"]


def board_post(user, target, project_id: int):
    client = Client()
    client.force_login(user)
    return client.post(
        "/sessions/new/", {"title": "Bound", "target": target.pk, "project": project_id}
    )


def test_the_board_form_binds_the_new_task_and_refuses_a_forbidden_project_like_an_unknown(
    owner, target, project, theirs
):
    made = board_post(owner, target, project.pk)
    forbidden = board_post(owner, target, theirs.pk)
    unknown = board_post(owner, target, theirs.pk + 1000)

    assert made.status_code == 302
    bound = Task.objects.get(owner=owner, title="Bound")
    assert task_workspace(task_id=bound.pk).project == project
    assert forbidden.status_code == unknown.status_code != 302
    assert alerts(forbidden) == alerts(unknown) != []
    assert "theirs" not in forbidden.content.decode()
    assert Task.objects.filter(owner=owner, title="Bound").count() == 1


ERROR_TEXT = re.compile(r'class="(?:form-error|errorlist[^"]*)"[^>]*>(.*?)</')


def alerts(response) -> list[str]:
    """The form's error texts (field and non-field) on the page."""
    return ERROR_TEXT.findall(response.content.decode())
