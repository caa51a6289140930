"""Fixtures for the web tests: an authenticated socket factory that goes through the real ASGI
stack (origin check, session-cookie auth, routing). Users, the target and the session are
tests/integration/conftest.py's."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from channels.testing import WebsocketCommunicator
from django.test import Client

from kandev_web.asgi import application

ORIGIN = b"http://127.0.0.1"
FRAME_HEADER = re.compile(
    r'^<span id="ws-seq" data-kind="(?P<kind>\w+)" data-from="(?P<first>\d+)"'
    r' data-seq="(?P<last>\d+)"'
)


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # Real hashing costs ~0.5 s per user on this machine; these tests are not about hashing.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


@pytest.fixture
def socket_for(owner, stranger) -> Callable[..., WebsocketCommunicator]:
    """socket_for(user, path) -> an unconnected communicator; user None means anonymous.
    Logins happen here, outside the event loop, for the two users the tests know."""
    cookies = {user.pk: session_cookie(user) for user in (owner, stranger)}

    def build(user, path: str, *, origin: bytes = ORIGIN) -> WebsocketCommunicator:
        headers = [(b"origin", origin), (b"host", b"127.0.0.1")]
        if user is not None:
            headers.append((b"cookie", f"sessionid={cookies[user.pk]}".encode()))
        return WebsocketCommunicator(application, path, headers=headers)

    return build


def parse_header(frame: str) -> dict[str, object]:
    match = FRAME_HEADER.match(frame)
    assert match, f"frame without a seq header: {frame[:120]!r}"
    return {"kind": match["kind"], "first": int(match["first"]), "last": int(match["last"])}
