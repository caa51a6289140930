"""One person's open sockets are capped (KANDEV_WS_MAX_PER_USER), counted in Redis across every
Daphne process: the socket past the cap is accepted, told why, and closed with 4429; a place comes
back when a socket closes, and the places of a process that died expire with their heartbeats."""

from __future__ import annotations

import aiohttp
import psutil
import pytest
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.urls import re_path

from sessions_app.consumers import SessionConsumer
from sessions_app.services.sockets import hold_ttl_s
from tests.integration.live_daphne import live_daphne
from tests.integration.web.conftest import ORIGIN, session_cookie
from tests.integration.web.test_socket_logins import opened, socket_with

pytestmark = pytest.mark.django_db(transaction=True)

TOO_MANY_SOCKETS = 4429


@pytest.fixture
def cookie(owner) -> str:
    return session_cookie(owner)


async def refused(socket: WebsocketCommunicator) -> str:
    """The error frame a socket over the cap gets before its 4429; fails if it got in."""
    connected, _ = await socket.connect(timeout=10)
    assert connected  # accepted first, so the browser sees a close code, not a failed handshake
    frame = await socket.receive_from(timeout=10)
    assert await socket.receive_output(timeout=10) == {
        "type": "websocket.close",
        "code": TOO_MANY_SOCKETS,
    }
    return frame


async def test_it_refuses_the_socket_past_the_cap_and_accepts_again_once_one_closes(
    owner, session, cookie, settings
):
    settings.KANDEV_WS_MAX_PER_USER = 3
    phone_cookie = await database_sync_to_async(session_cookie)(
        owner
    )  # every login of the person counts
    open_ones = [
        await opened(cookie, f"/ws/sessions/{session.pk}/"),
        await opened(cookie, "/ws/board/"),
        await opened(phone_cookie, f"/ws/sessions/{session.pk}/"),
    ]

    for path in (f"/ws/sessions/{session.pk}/", "/ws/board/"):
        frame = await refused(socket_with(phone_cookie, path))
        assert 'data-code="too_many_sockets"' in frame
        assert "You already have 3 live pages open" in frame

    await open_ones.pop().disconnect()
    open_ones.append(await opened(phone_cookie, "/ws/board/"))
    for socket in open_ones:
        await socket.disconnect()


def app_with_wall_clock(clock):
    from channels.routing import URLRouter

    route = re_path(
        r"^ws/sessions/(?P<session_id>\d+)/$", SessionConsumer.as_asgi(wall_clock=clock)
    )
    return AuthMiddlewareStack(URLRouter([route]))


def daphne_listening_on(base_url: str) -> psutil.Process:
    port = base_url.rsplit(":", 1)[1]
    for child in psutil.Process().children(recursive=True):
        command = child.cmdline()
        if "daphne" in command and port in command:
            return child
    raise AssertionError(f"no daphne child on port {port}")


@pytest.mark.timeout(180)
async def test_a_crashed_process_s_sockets_count_until_their_heartbeats_lapse(
    owner, session, cookie, settings, tmp_path, redis_client
):
    settings.KANDEV_WS_MAX_PER_USER = 2
    path = f"/ws/sessions/{session.pk}/"
    env = {"KANDEV_WS_MAX_PER_USER": "2"}
    with live_daphne(env=env, log_path=tmp_path / "daphne.log") as base_url:
        async with aiohttp.ClientSession() as client:
            held_open = []
            for _ in range(2):
                socket = await client.ws_connect(
                    base_url.replace("http", "ws") + path,
                    headers={"Origin": base_url, "Cookie": f"sessionid={cookie}"},
                )
                first = await socket.receive(timeout=30)
                assert first.type == aiohttp.WSMsgType.TEXT and "ws-seq" in first.data
                held_open.append(socket)
            # The other process's two sockets fill this person's places here too.
            await refused(socket_with(cookie, path))

            daphne = daphne_listening_on(base_url)
            daphne.kill()  # no disconnect, no release: its entries stay behind
            daphne.wait(timeout=10)

    left_behind = redis_client.zrange(
        f"{django_settings.KANDEV_REDIS_PREFIX}:sockets:{owner.pk}", 0, -1, withscores=True
    )
    assert len(left_behind) == 2
    oldest, newest = min(s for _, s in left_behind), max(s for _, s in left_behind)
    still_fresh = WebsocketCommunicator(
        app_with_wall_clock(lambda: oldest + hold_ttl_s() - 0.5),
        path,
        headers=[(b"origin", ORIGIN), (b"cookie", f"sessionid={cookie}".encode())],
    )
    await refused(still_fresh)
    lapsed = WebsocketCommunicator(
        app_with_wall_clock(lambda: newest + hold_ttl_s() + 0.5),
        path,
        headers=[(b"origin", ORIGIN), (b"cookie", f"sessionid={cookie}".encode())],
    )
    connected, _ = await lapsed.connect(timeout=10)
    assert connected
    assert 'data-kind="snapshot"' in await lapsed.receive_from(timeout=10)
    await lapsed.disconnect()
