"""The live socket's edges: who may open it (Origin by scheme, host and port), what it does with
hostile frames (deep nesting, unknown paths, snapshot floods)."""

from __future__ import annotations

import pytest
from channels.testing import WebsocketCommunicator

from kandev_web.asgi import application
from kandev_web.ws_origin import socket_origin_allowed
from tests.integration.web.conftest import session_cookie

# Sockets run the consumer in other threads, so what the tests write must be committed.
live_db = pytest.mark.django_db(transaction=True)


def socket(cookie: str | None, path: str, *, origin: bytes | None, host: bytes, scheme: str = "ws"):
    headers = [(b"host", host)]
    if origin is not None:
        headers.append((b"origin", origin))
    if cookie is not None:
        headers.append((b"cookie", f"sessionid={cookie}".encode()))
    communicator = WebsocketCommunicator(application, path, headers=headers)
    communicator.scope["scheme"] = scheme
    return communicator


@pytest.fixture
def cookie(owner) -> str:
    return session_cookie(owner)


@live_db
@pytest.mark.parametrize(
    ("origin", "host"),
    [
        (b"http://127.0.0.1:9999", b"127.0.0.1:8000"),  # another port of the same host
        (b"http://127.0.0.1:9999", b"127.0.0.1"),
        (b"http://127.0.0.1", b"127.0.0.1:8000"),
        (b"https://127.0.0.1:8000", b"127.0.0.1:8000"),  # the scheme differs
        (b"http://localhost:8000", b"127.0.0.1:8000"),  # another host that is also allowed
        (b"null", b"127.0.0.1:8000"),
        (None, b"127.0.0.1:8000"),
    ],
)
async def test_a_socket_from_another_origin_is_refused_even_on_the_same_host(
    cookie, session, origin, host
):
    communicator = socket(cookie, f"/ws/sessions/{session.pk}/", origin=origin, host=host)
    connected, _ = await communicator.connect(timeout=10)
    assert not connected


@live_db
@pytest.mark.parametrize(
    ("origin", "host", "scheme"),
    [
        (b"http://127.0.0.1:8000", b"127.0.0.1:8000", "ws"),
        (b"http://127.0.0.1", b"127.0.0.1", "ws"),
        (b"http://127.0.0.1:80", b"127.0.0.1", "ws"),  # the default port, spelled out
        (b"https://localhost", b"localhost:443", "wss"),
    ],
)
async def test_a_socket_from_the_page_s_own_origin_connects(cookie, session, origin, host, scheme):
    communicator = socket(
        cookie, f"/ws/sessions/{session.pk}/", origin=origin, host=host, scheme=scheme
    )
    connected, _ = await communicator.connect(timeout=10)
    assert connected
    await communicator.receive_from(timeout=10)  # the snapshot
    await communicator.disconnect()


def test_a_trusted_origin_is_allowed_by_scheme_host_and_port(settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://app.example.com", "https://*.example.org:8443"]
    allowed = {
        origin: socket_origin_allowed(origin=origin, host="127.0.0.1:8000", secure=False)
        for origin in [
            "https://app.example.com",
            "https://app.example.com:443",
            "http://app.example.com",
            "https://app.example.com:8443",
            "https://eu.example.org:8443",
            "https://example.org:8443",
            "https://eu.example.org",
        ]
    }
    assert allowed == {
        "https://app.example.com": True,
        "https://app.example.com:443": True,
        "http://app.example.com": False,
        "https://app.example.com:8443": False,
        "https://eu.example.org:8443": True,
        "https://example.org:8443": True,
        "https://eu.example.org": False,
    }


def test_behind_a_tls_proxy_the_forwarded_scheme_counts(settings):
    from kandev_web.ws_origin import _secure

    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    forwarded = {"scheme": "ws", "headers": [(b"x-forwarded-proto", b"https")]}
    assert _secure(forwarded) and not _secure({"scheme": "ws", "headers": []})


def test_a_host_outside_allowed_hosts_is_refused_even_with_a_matching_origin():
    assert not socket_origin_allowed(
        origin="http://evil.example:8000", host="evil.example:8000", secure=False
    )


async def open_socket(cookie: str, session) -> WebsocketCommunicator:
    communicator = socket(
        cookie, f"/ws/sessions/{session.pk}/", origin=b"http://127.0.0.1", host=b"127.0.0.1"
    )
    connected, _ = await communicator.connect(timeout=10)
    assert connected
    assert 'data-kind="snapshot"' in await communicator.receive_from(timeout=10)
    return communicator


@live_db
@pytest.mark.parametrize(
    "frame",
    [
        "[" * 5000 + "]" * 5000,
        '{"a":' * 2500 + "1" + "}" * 2500,
        '{"type": "snapshot", "x": ' + "[" * 100 + "]" * 100 + "}",
    ],
    ids=["arrays", "objects", "deep-inside-a-snapshot-request"],
)
async def test_a_deeply_nested_frame_gets_an_error_frame_and_the_socket_stays_open(
    cookie, session, frame
):
    communicator = await open_socket(cookie, session)

    await communicator.send_to(text_data=frame)
    answer = await communicator.receive_from(timeout=10)

    assert 'data-code="too_deep"' in answer and "nested too deeply" in answer
    await communicator.send_to(text_data='{"type": "snapshot"}')
    assert 'data-kind="snapshot"' in await communicator.receive_from(timeout=10)
    await communicator.disconnect()


@pytest.mark.parametrize("path", ["/ws/nope/", "/ws/sessions/abc/", "/ws/sessions/1/extra/", "/x"])
async def test_an_unknown_socket_path_is_closed_cleanly_like_an_unknown_session(path):
    communicator = socket(None, path, origin=b"http://127.0.0.1", host=b"127.0.0.1")

    connected, _ = await communicator.connect(timeout=10)

    assert connected
    assert await communicator.receive_output(timeout=10) == {
        "type": "websocket.close",
        "code": 4404,
    }


class SteppedClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def app_with_clock(clock: SteppedClock):
    from channels.auth import AuthMiddlewareStack
    from channels.routing import URLRouter
    from django.urls import re_path

    from sessions_app.consumers import SessionConsumer

    route = re_path(r"^ws/sessions/(?P<session_id>\d+)/$", SessionConsumer.as_asgi(clock=clock))
    return AuthMiddlewareStack(URLRouter([route]))


async def frames_kinds(communicator: WebsocketCommunicator, count: int) -> list[str]:
    kinds = []
    for _ in range(count):
        frame = await communicator.receive_from(timeout=10)
        kinds.append("snapshot" if 'data-kind="snapshot"' in frame else frame)
    return kinds


@live_db
async def test_snapshot_requests_past_the_burst_get_a_rate_limited_error_frame(
    cookie, session, settings
):
    settings.KANDEV_WS_SYNC_BURST = 5
    settings.KANDEV_WS_SYNCS_PER_MINUTE = 12  # one every 5 s
    clock = SteppedClock()
    communicator = WebsocketCommunicator(
        app_with_clock(clock),
        f"/ws/sessions/{session.pk}/",
        headers=[(b"cookie", f"sessionid={cookie}".encode())],
    )
    connected, _ = await communicator.connect(timeout=10)
    assert connected
    assert await frames_kinds(communicator, 1) == ["snapshot"]  # the connect's own: free

    for _ in range(50):
        await communicator.send_to(text_data='{"type": "snapshot"}')
    kinds = await frames_kinds(communicator, 50)

    assert kinds[:5] == ["snapshot"] * 5
    assert all('data-code="rate_limited"' in k and "ask again in 5 s" in k for k in kinds[5:])

    clock.now += 5  # one token back
    await communicator.send_to(text_data='{"type": "resume", "last_seq": -1}')
    await communicator.send_to(text_data='{"type": "snapshot"}')
    resumed, refused = await frames_kinds(communicator, 2)
    assert resumed == "snapshot" and 'data-code="rate_limited"' in refused
    await communicator.disconnect()
