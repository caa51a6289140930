"""The live board socket: ws/board/[?q=...&archived=1].

Anonymous -> close 4401, over the person's socket cap -> 4429 (after accepting, like the session
socket; socket_login.py). Otherwise the socket joins the
user's own board group (``events.board_group_name``: only tasks this user owns are ever pushed
there) and sends the rendered columns, then sends them again whenever a ``board.changed`` hint
arrives. Hints carry nothing: the columns are read afresh from Postgres for this user and this
socket's search, so a lost or duplicated hint can't show anything wrong, and a burst of hints
(a prompt's queued -> running -> idle) is coalesced into one re-read. Each re-read checks the login
first: once it has ended (logout, deactivation, a new password, the session revoked or expired)
the socket closes with 4410 instead of sending the board.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.contrib.auth.models import User

from sessions_app.board_selectors import BOARD_SEARCH_MAX_CHARS, board_columns
from sessions_app.event_types import board_group_name
from sessions_app.frames import board_frame, frame_parts
from sessions_app.socket_login import LoginBoundSocket

# Hints arriving within this window after the first are answered by one re-read.
COALESCE_S = 0.15


def _board_frame(*, user: Any, query: str, archived: bool) -> str:
    return board_frame(columns=board_columns(user=user, query=query, archived=archived))


class BoardConsumer(LoginBoundSocket, AsyncWebsocketConsumer):
    group: str | None = None
    query: str = ""
    archived: bool = False
    _pending: asyncio.Task | None = None
    _dirty: bool = False

    async def connect(self) -> None:
        await self.accept()
        if not await self.login_admit():
            return
        user = self.scope["user"]
        assert isinstance(user, User)  # login_admit let only a signed-in user through
        params = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        self.query = (params.get("q") or [""])[0][:BOARD_SEARCH_MAX_CHARS]
        self.archived = (params.get("archived") or [""])[0] == "1"
        self.group = board_group_name(user.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self._send_board()

    async def disconnect(self, code: int) -> None:
        if self._pending is not None:
            self._pending.cancel()
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)
        await self.login_leave()

    async def board_changed(self, message: dict[str, Any]) -> None:
        self._dirty = True
        if self._pending is None or self._pending.done():
            self._pending = asyncio.ensure_future(self._send_while_dirty())

    async def _send_while_dirty(self) -> None:
        # A hint that arrives during a re-read marks the board dirty again: read once more.
        while self._dirty:
            await asyncio.sleep(COALESCE_S)
            self._dirty = False
            await self._send_board()

    async def _send_board(self) -> None:
        if not await self.login_still_current():
            return
        frame = await database_sync_to_async(_board_frame)(
            user=self.scope["user"], query=self.query, archived=self.archived
        )
        # A big board goes in parts under the transport's frame limit (live.js joins them).
        for part in frame_parts(frame):
            await self.send(text_data=part)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """The board takes no commands; anything a client sends is ignored (live.js may send a
        resume frame meant for session sockets)."""
