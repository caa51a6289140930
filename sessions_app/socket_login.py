"""What every signed-in socket does about its login and its place in the person's count: one
mixin for the session socket and the board socket (the rules are sessions_app/services/sockets.py).

Close codes (sent after accepting, so the browser sees them instead of a failed handshake, which
it would retry forever; static/js/live.js reads them):
  4401  not signed in when the socket opened: the page goes to the login page
  4410  the login ended while the socket was open (logout, deactivation, new password, session
        revoked or expired): the page says so and goes to the login page, never reconnecting
  4429  the person already has KANDEV_WS_MAX_PER_USER sockets open; an error frame says so
        first (code ``too_many_sockets``); the page shows it and does not retry on its own
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from sessions_app.frames import error_frame
from sessions_app.services.sockets import (
    login_group_name,
    login_is_current,
    socket_hold,
    socket_refresh,
    socket_release,
    user_sockets_group_name,
)

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_LOGIN_ENDED = 4410
CLOSE_TOO_MANY_SOCKETS = 4429


class LoginBoundSocket(AsyncWebsocketConsumer):
    """The base of the session and board consumers. ``connect`` calls ``login_admit`` right
    after ``accept``; every read that sends the page data calls ``login_still_current`` first;
    ``disconnect`` calls ``login_leave``."""

    user_id: int | None = None
    session_key: str | None = None
    login_groups: tuple[str, ...] = ()
    login_closed = False  # closed with 4410; nothing more is sent
    _holding = False
    # The next periodic re-check (one timer per socket), and the request for it under way.
    _login_timer: asyncio.TimerHandle | None = None
    _login_asking: asyncio.Task | None = None

    def __init__(
        self, *args: Any, wall_clock: Callable[[], float] = time.time, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.wall_clock = wall_clock

    async def login_admit(self) -> bool:
        """True when this socket may go on; otherwise it is closed already (4401 or 4429)."""
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return False
        self.user_id = user.pk
        self.session_key = self.scope["session"].session_key
        held = await sync_to_async(socket_hold, thread_sensitive=False)(
            user_id=self.user_id, socket_id=self.channel_name, now=self.wall_clock()
        )
        if not held:
            most = settings.KANDEV_WS_MAX_PER_USER
            await self.send(
                text_data=error_frame(
                    code="too_many_sockets",
                    message=f"You already have {most} live pages open, the most one person may"
                    " have. Close some tabs or windows, then reload this page.",
                )
            )
            await self.close(code=CLOSE_TOO_MANY_SOCKETS)
            return False
        self._holding = True
        # Joined before anything is read: a login that ends after this is heard of, one that
        # ended before it fails the re-check of the first read.
        self.login_groups = (
            login_group_name(self.session_key or ""),
            user_sockets_group_name(self.user_id),
        )
        for group in self.login_groups:
            await self.channel_layer.group_add(group, self.channel_name)
        self._login_check_later()
        return True

    async def login_leave(self) -> None:
        if self._login_timer is not None:
            self._login_timer.cancel()
            self._login_timer = None
        if self._login_asking is not None:
            self._login_asking.cancel()
        for group in self.login_groups:
            await self.channel_layer.group_discard(group, self.channel_name)
        self.login_groups = ()
        if self._holding and self.user_id is not None:  # holding implies admitted
            self._holding = False
            await sync_to_async(socket_release, thread_sensitive=False)(
                user_id=self.user_id, socket_id=self.channel_name
            )

    async def login_still_current(self) -> bool:
        """Check the login again; when it no longer holds, close with 4410 and answer False."""
        if self.login_closed:
            return False
        current = self.user_id is not None and await database_sync_to_async(login_is_current)(
            session_key=self.session_key, user_id=self.user_id
        )
        if not current:
            await self.login_end()
        return current

    async def login_end(self) -> None:
        if self.login_closed:
            return
        self.login_closed = True
        await self.close(code=CLOSE_LOGIN_ENDED)

    def _login_check_later(self) -> None:
        self._login_timer = asyncio.get_running_loop().call_later(
            settings.KANDEV_WS_LOGIN_CHECK_S, self._login_check_due
        )

    def _login_check_due(self) -> None:
        self._login_timer = None
        # Held here: the loop keeps only a weak reference to a task.
        self._login_asking = asyncio.get_running_loop().create_task(self._ask_login_check())

    async def _ask_login_check(self) -> None:
        """Through this socket's own channel, so the check runs between messages and never
        inside another frame's parts."""
        try:
            await self.channel_layer.send(self.channel_name, {"type": "login.check"})
        except Exception:  # Redis away or this process's inbox full: ask again next round
            logger.warning("login re-check of a socket not sent; asking again", exc_info=True)
            self._login_check_later()

    # Channel-layer handlers (sessions_app/services/sockets.py sends the first two).

    async def login_ended(self, message: dict[str, Any]) -> None:
        await self.login_end()

    async def login_recheck(self, message: dict[str, Any]) -> None:
        await self._login_recheck_quietly()

    async def login_check(self, message: dict[str, Any]) -> None:
        """The periodic heartbeat and re-check (every KANDEV_WS_LOGIN_CHECK_S)."""
        if self.login_closed or self.user_id is None:  # scheduled only once admitted
            return
        self._login_check_later()
        await sync_to_async(socket_refresh, thread_sensitive=False)(
            user_id=self.user_id, socket_id=self.channel_name, now=self.wall_clock()
        )
        await self._login_recheck_quietly()

    async def _login_recheck_quietly(self) -> None:
        try:
            await self.login_still_current()
        except Exception:  # the database away: keep the socket, the next round checks again
            logger.warning("login re-check of a socket failed; trying again", exc_info=True)
