"""The headers every answer carries: the Content-Security-Policy (with this host's websocket
origin), Cache-Control: no-store on a signed-in person's pages and on every API answer, and
templates with nothing inline for the policy to refuse."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.test import Client

from sessions_app.api_auth import api_token_create
from tests.support.factories import SessionFactory

pytestmark = pytest.mark.django_db

DIRECTIVES = [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "frame-ancestors 'none'",
]


def directives(response) -> dict[str, str]:
    policy = response.headers["Content-Security-Policy"]
    return {part.split(" ", 1)[0]: part for part in policy.split("; ")}


@pytest.fixture
def signed_in(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


def test_every_page_carries_the_policy_signed_in_or_not(signed_in, owner):
    session = SessionFactory(owner=owner, title="Headers")
    for response in (
        Client().get("/accounts/login/"),
        signed_in.get("/"),
        signed_in.get(f"/sessions/{session.pk}/"),
        Client().get("/no/such/page/"),
    ):
        found = directives(response)
        for directive in DIRECTIVES:
            assert found[directive.split(" ")[0]] == directive, response.request["PATH_INFO"]


def test_connect_src_names_this_hosts_websocket_origin(signed_in):
    plain = directives(signed_in.get("/", headers={"host": "127.0.0.1:8000"}))
    secure = directives(signed_in.get("/", headers={"host": "127.0.0.1:8000"}, secure=True))

    assert plain["connect-src"] == "connect-src 'self' ws://127.0.0.1:8000"
    assert secure["connect-src"] == "connect-src 'self' wss://127.0.0.1:8000"


def test_a_signed_in_persons_pages_are_never_stored(signed_in, owner):
    session = SessionFactory(owner=owner, title="Headers")

    assert signed_in.get("/").headers["Cache-Control"] == "no-store"
    assert signed_in.get(f"/sessions/{session.pk}/").headers["Cache-Control"] == "no-store"


def test_every_api_answer_is_never_stored_authenticated_or_not(owner):
    token = api_token_create(user=owner)
    authenticated = Client(headers={"authorization": f"Bearer {token}"})

    answers = [
        authenticated.get("/api/v1/tasks"),
        Client().get("/api/v1/tasks"),
        Client().get("/api/openapi.json"),
    ]

    assert [a.status_code < 500 for a in answers] == [True, True, True]
    assert [a.headers.get("Cache-Control") for a in answers] == ["no-store"] * 3


def test_templates_hold_no_inline_script_style_or_event_handler():
    inline = re.compile(
        r"<script(?![^>]*\bsrc=)[^>]*>|<style\b|\sstyle=|\son[a-z]+=|javascript:", re.IGNORECASE
    )
    found = [
        f"{path.relative_to(settings.BASE_DIR)}: {match.group(0)}"
        for path in (settings.BASE_DIR / "templates").rglob("*.html")
        for match in inline.finditer(path.read_text())
    ]

    assert found == []
