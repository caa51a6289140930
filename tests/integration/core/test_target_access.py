"""Targets belong to the operator: no API token creates one, and a user sees names and models only.

How a target is set up (an agent's command line, a server path, a base URL, a key variable) is
never shown to a user, in the API or on a page.
"""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from sessions_app.api_auth import api_token_create
from sessions_app.models import ProviderTarget
from sessions_app.services import session_create

pytestmark = pytest.mark.django_db

# How the operator's targets are set up: none of it may reach a user.
SET_UP = [
    "/opt/kandev-agents/bin/secret-agent",
    "--acp-token-file",
    "http://127.0.0.1:4000/v1",
    "127.0.0.1:4000",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
]


@pytest.fixture
def operators_targets(db) -> list[ProviderTarget]:
    proxy = ProviderTarget.objects.create(
        name="Team proxy",
        kind=ProviderTarget.Kind.OPENAI,
        model="gpt-team",
        base_url="http://127.0.0.1:4000/v1",
        api_key_env="OPENAI_API_KEY",
    )
    agent = ProviderTarget.objects.create(
        name="Team agent",
        kind=ProviderTarget.Kind.ACP,
        agent_kind=ProviderTarget.AgentKind.CLAUDE,
        api_key_env="ANTHROPIC_API_KEY",
    )
    return [proxy, agent]


def post_json(client: Client, path: str, body: dict):
    return client.post(path, data=json.dumps(body), content_type="application/json")


@pytest.mark.parametrize(
    "body",
    [
        {"name": "Helper", "kind": "acp", "command": "sh -c 'cat /proc/$PPID/environ'"},
        {
            "name": "Claude (official)",
            "kind": "anthropic",
            "model": "m",
            "api_key_env": "SECRET_KEY",
            "base_url": "http://127.0.0.2:8080",
        },
        {"name": "Mock 2", "kind": "mock"},
    ],
)
def test_no_api_token_can_create_a_target_not_even_a_staff_ones(owner_api, body):
    staff = get_user_model().objects.create_user(username="ops", is_staff=True, is_superuser=True)
    staff_api = Client(headers={"authorization": f"Bearer {api_token_create(user=staff)}"})

    for client in (owner_api, staff_api):
        response = post_json(client, "/api/v1/targets", body)

        assert response.status_code == 403
        assert "operator" in response.json()["detail"]
    assert not ProviderTarget.objects.exists()


def test_the_target_list_shows_a_user_names_and_models_only(owner_api, operators_targets):
    response = owner_api.get("/api/v1/targets")

    assert response.status_code == 200
    listed = response.json()
    assert [(t["name"], t["model"]) for t in listed] == [
        ("Team agent", ""),
        ("Team proxy", "gpt-team"),
    ]
    # Whether its agent asks before it edits or runs anything is the person's business too.
    assert {frozenset(t) for t in listed} == {frozenset(SEEN_BY_USERS)}
    for text in SET_UP:
        assert text not in response.content.decode()


SEEN_BY_USERS = {"id", "name", "model", "permission_policy"}


def test_the_openapi_document_describes_no_way_to_see_or_set_a_targets_set_up():
    document = Client().get("/api/openapi.json").json()

    schemas = document["components"]["schemas"]
    assert set(schemas["TargetOut"]["properties"]) == SEEN_BY_USERS
    assert "TargetIn" not in schemas
    assert set(document["paths"]["/api/v1/targets"]["post"]["responses"]) <= {"401", "403"}


def test_the_board_and_the_session_page_never_show_a_targets_set_up(owner, operators_targets):
    session = session_create(owner=owner, target=operators_targets[0], title="Plan")
    browser = Client()
    browser.force_login(owner)

    board = browser.get("/")
    session_page = browser.get(f"/sessions/{session.pk}/")

    assert "Team proxy" in board.content.decode()  # the new-session form offers it by name
    for page in (board, session_page):
        assert page.status_code == 200
        for text in SET_UP:
            assert text not in page.content.decode()


def test_the_session_detail_names_its_target_without_its_set_up(
    owner, owner_api, operators_targets
):
    session = session_create(owner=owner, target=operators_targets[1], title="Agent work")

    response = owner_api.get(f"/api/v1/sessions/{session.pk}")

    assert response.json()["target"] == {
        "id": operators_targets[1].pk,
        "name": "Team agent",
        "kind": "acp",
    }
    for text in SET_UP:
        assert text not in response.content.decode()
