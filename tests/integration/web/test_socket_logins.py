"""Sockets follow the login: whatever ends a person's login (logout, deactivation, a new password,
the session revoked, deleted behind Django's back or expired) closes that login's open session
and board sockets with 4410, and a stale socket is never sent another snapshot. Through the real
ASGI stack, Postgres and Redis (the channel layer and the per-person count)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import aiohttp
import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.sessions.models import Session as LoginSession
from django.db import connection
from django.test import Client

from kandev_web.asgi import application
from sessions_app.services.task_sessions import task_rename
from tests.integration.live_daphne import live_daphne
from tests.integration.web.conftest import ORIGIN, session_cookie

pytestmark = pytest.mark.django_db(transaction=True)

LOGIN_ENDED = 4410


def socket_with(cookie: str, path: str) -> WebsocketCommunicator:
    headers = [
        (b"origin", ORIGIN),
        (b"host", b"127.0.0.1"),
        (b"cookie", f"sessionid={cookie}".encode()),
    ]
    return WebsocketCommunicator(application, path, headers=headers)


async def opened(cookie: str, path: str) -> WebsocketCommunicator:
    """A connected socket whose first frame (snapshot or board) has arrived."""
    socket = socket_with(cookie, path)
    connected, _ = await socket.connect(timeout=10)
    assert connected
    first = await socket.receive_from(timeout=10)
    assert 'data-kind="snapshot"' in first or 'id="board-columns"' in first
    return socket


async def close_code(socket: WebsocketCommunicator, *, within: float) -> int:
    """The code the server closes ``socket`` with, within ``within`` seconds (frames before it,
    such as live events, are skipped); a socket still open by then fails the test."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        left = deadline - loop.time()
        assert left > 0, "the socket was not closed in time"
        output = await socket.receive_output(timeout=left)
        if output["type"] == "websocket.close":
            return output["code"]


@database_sync_to_async
def log_out(cookie: str) -> None:
    client = Client()
    client.cookies["sessionid"] = cookie
    assert client.post("/accounts/logout/").status_code == 302


@database_sync_to_async
def deactivate(user) -> None:
    user.is_active = False
    user.save()


@database_sync_to_async
def change_password(user) -> None:
    user.set_password("a new password, elsewhere")
    user.save()


@database_sync_to_async
def revoke_every_login(user) -> None:
    """What an operator does from the shell (Django keeps no user -> session link)."""
    keys = [
        login.session_key
        for login in LoginSession.objects.all()
        if login.get_decoded().get("_auth_user_id") == str(user.pk)
    ]
    assert LoginSession.objects.filter(session_key__in=keys).delete()[0] >= 1


@database_sync_to_async
def raw_sql(statement: str, cookie: str) -> None:
    """Behind Django's back: no signal fires."""
    with connection.cursor() as cursor:
        cursor.execute(statement, [cookie])
        assert cursor.rowcount == 1


EXPIRE = (
    "UPDATE django_session SET expire_date = now() - interval '1 minute' WHERE session_key = %s"
)
DELETE = "DELETE FROM django_session WHERE session_key = %s"


@pytest.fixture
def cookie(owner) -> str:
    return session_cookie(owner)


@pytest.mark.parametrize(
    "end_login",
    [
        lambda owner, cookie: log_out(cookie),
        lambda owner, cookie: deactivate(owner),
        lambda owner, cookie: change_password(owner),
        lambda owner, cookie: revoke_every_login(owner),
    ],
    ids=["logout", "made-inactive", "password-changed", "session-revoked"],
)
async def test_it_closes_the_session_and_board_sockets_within_a_second_when_the_login_ends(
    owner, session, cookie, end_login: Callable[..., Awaitable[None]], settings
):
    settings.KANDEV_WS_LOGIN_CHECK_S = 3600  # the signal alone, not the periodic re-check
    session_socket = await opened(cookie, f"/ws/sessions/{session.pk}/")
    board_socket = await opened(cookie, "/ws/board/")

    await end_login(owner, cookie)

    codes = await asyncio.gather(
        close_code(session_socket, within=1.0), close_code(board_socket, within=1.0)
    )
    assert codes == [LOGIN_ENDED, LOGIN_ENDED]


async def test_a_logout_closes_only_that_login_s_sockets(owner, session, cookie, settings):
    settings.KANDEV_WS_LOGIN_CHECK_S = 3600
    phone_cookie = await database_sync_to_async(session_cookie)(owner)
    desktop = await opened(cookie, f"/ws/sessions/{session.pk}/")
    phone = await opened(phone_cookie, f"/ws/sessions/{session.pk}/")

    await log_out(cookie)

    assert await close_code(desktop, within=1.0) == LOGIN_ENDED
    await phone.send_to(text_data='{"type": "snapshot"}')
    assert 'data-kind="snapshot"' in await phone.receive_from(timeout=10)
    await phone.disconnect()


@pytest.mark.parametrize(
    "statement", [EXPIRE, DELETE], ids=["session-expired", "row-deleted-by-sql"]
)
async def test_a_login_that_ends_without_a_signal_closes_its_sockets_within_the_check_interval(
    session, cookie, settings, statement
):
    settings.KANDEV_WS_LOGIN_CHECK_S = 0.3
    session_socket = await opened(cookie, f"/ws/sessions/{session.pk}/")
    board_socket = await opened(cookie, "/ws/board/")

    await raw_sql(statement, cookie)

    codes = await asyncio.gather(
        close_code(session_socket, within=0.3 + 1.0), close_code(board_socket, within=0.3 + 1.0)
    )
    assert codes == [LOGIN_ENDED, LOGIN_ENDED]


@pytest.mark.parametrize(
    "request_frame", ['{"type": "snapshot"}', '{"type": "resume", "last_seq": 0}']
)
async def test_a_snapshot_or_resume_on_a_socket_whose_login_expired_is_refused(
    session, cookie, settings, request_frame
):
    settings.KANDEV_WS_LOGIN_CHECK_S = 3600  # nothing closes it before it asks
    socket = await opened(cookie, f"/ws/sessions/{session.pk}/")
    await raw_sql(EXPIRE, cookie)

    await socket.send_to(text_data=request_frame)

    assert await socket.receive_output(timeout=10) == {"type": "websocket.close", "code": 4410}


async def test_a_board_whose_login_expired_closes_instead_of_showing_the_tasks_again(
    session, cookie, settings
):
    settings.KANDEV_WS_LOGIN_CHECK_S = 3600
    board = await opened(cookie, "/ws/board/")
    await raw_sql(EXPIRE, cookie)

    await database_sync_to_async(task_rename)(
        task=session.task, title="Renamed after the login ended"
    )

    assert await board.receive_output(timeout=10) == {"type": "websocket.close", "code": 4410}


@pytest.mark.timeout(180)
async def test_a_logout_closes_the_login_s_socket_served_by_another_daphne_process(
    session, cookie, tmp_path
):
    with live_daphne(log_path=tmp_path / "daphne.log") as base_url:
        async with aiohttp.ClientSession() as client:
            socket = await client.ws_connect(
                base_url.replace("http", "ws") + f"/ws/sessions/{session.pk}/",
                headers={"Origin": base_url, "Cookie": f"sessionid={cookie}"},
            )
            first = await socket.receive(timeout=30)
            assert first.type == aiohttp.WSMsgType.TEXT and "ws-seq" in first.data

            await log_out(cookie)  # here, in the test process

            closing = await socket.receive(timeout=1.0)
            assert closing.type == aiohttp.WSMsgType.CLOSE, closing
            assert socket.close_code == LOGIN_ENDED
