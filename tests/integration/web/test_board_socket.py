"""The live board socket, through the real ASGI stack with Redis as the channel layer: every open
board of the owner follows state changes, renames and new sessions; another user's board never
hears of them and never shows them."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async

from sessions_app.models import Session
from sessions_app.services import session_create
from sessions_app.services.task_sessions import task_archive, task_rename
from tests.integration.web.retry_state import RETRY_AT_S, waiting_session
from tests.support.factories import SessionFactory
from tests.support.session_states import session_walk_to

pytestmark = pytest.mark.django_db(transaction=True)


async def open_board(socket_for, user, path="/ws/board/"):
    socket = socket_for(user, path)
    connected, _ = await socket.connect()
    assert connected
    first = await socket.receive_from()
    assert first.startswith('<div id="board-columns" class="board-columns" hx-swap-oob="true">')
    return socket, first


async def next_board(socket, *, containing: str, timeout: float = 10) -> str:
    """The first board frame that contains ``containing`` (hints may coalesce or come in pairs)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        frame = await socket.receive_from(timeout=max(0.1, deadline - loop.time()))
        if containing in frame:
            return frame


async def test_every_open_board_of_the_owner_follows_a_session_state_change(
    socket_for, owner, target
):
    session = await sync_to_async(SessionFactory)(owner=owner, target=target, title="Live one")
    desktop, first = await open_board(socket_for, owner)
    phone, _ = await open_board(socket_for, owner)
    assert 'data-state="idle"' in first

    await sync_to_async(session_walk_to)(session=session, state=Session.State.NEEDS_ATTENTION)

    for socket in (desktop, phone):
        frame = await next_board(socket, containing='data-state="needs_attention"')
        needs_attention = frame.split('id="column-needs_attention"')[1].split("</section>")[0]
        assert f'id="task-{session.task_id}"' in needs_attention
        await socket.disconnect()


async def test_a_retry_shows_its_countdown_live(socket_for, owner, target):
    session = await sync_to_async(SessionFactory)(owner=owner, target=target, title="Retrying")
    board, _ = await open_board(socket_for, owner)

    await sync_to_async(waiting_session)(session=session)

    frame = await next_board(board, containing=f'data-retry-at-ms="{int(RETRY_AT_S * 1000)}"')
    assert 'data-state="waiting_retry">Waiting to retry<' in frame
    await board.disconnect()


async def test_renames_archives_and_new_sessions_reach_the_board(socket_for, owner, target):
    session = await sync_to_async(SessionFactory)(owner=owner, target=target, title="Before")
    board, _ = await open_board(socket_for, owner)

    await sync_to_async(task_rename)(task=session.task, title="After")
    await next_board(board, containing=">After</a>")
    await sync_to_async(session_create)(
        owner=owner, target=target, title="Second try", task=session.task
    )
    frame = await next_board(board, containing=">Second try<")
    assert frame.count(f'id="task-{session.task_id}"') == 1
    await sync_to_async(task_archive)(task=session.task)
    frame = await next_board(board, containing="Nothing here.")
    assert f'id="task-{session.task_id}"' not in frame
    await board.disconnect()


async def test_another_users_board_hears_nothing_and_shows_nothing(
    socket_for, owner, stranger, target
):
    theirs = await sync_to_async(SessionFactory)(owner=stranger, target=target, title="Secret")
    mine, first = await open_board(socket_for, owner)
    assert "Secret" not in first

    await sync_to_async(session_walk_to)(session=theirs, state=Session.State.RUNNING)
    await sync_to_async(task_rename)(task=theirs.task, title="Still secret")

    assert await mine.receive_nothing(timeout=1.5)
    await mine.disconnect()


async def test_a_searching_board_keeps_its_search_on_every_update(socket_for, owner, target):
    wanted = await sync_to_async(SessionFactory)(owner=owner, target=target, title="Invoice run")
    other = await sync_to_async(SessionFactory)(owner=owner, target=target, title="Holiday plan")
    board, first = await open_board(socket_for, owner, "/ws/board/?q=invoice")
    assert "Invoice run" in first and "Holiday plan" not in first

    await sync_to_async(session_walk_to)(session=other, state=Session.State.RUNNING)
    await sync_to_async(session_walk_to)(session=wanted, state=Session.State.RUNNING)

    frame = await next_board(board, containing='data-state="running"')
    assert "Holiday plan" not in frame
    await board.disconnect()


async def test_an_anonymous_board_socket_is_closed_as_unauthenticated(socket_for):
    socket = socket_for(None, "/ws/board/")
    await socket.connect()
    assert await socket.receive_output() == {"type": "websocket.close", "code": 4401}
