"""The live session socket: ws/sessions/<id>/.

Protocol (server frames are HTML for htmx's ws extension, see frames.py):

1. Connect. Anonymous -> close 4401. A person with KANDEV_WS_MAX_PER_USER sockets open already ->
   a ``too_many_sockets`` error frame, then close 4429. Unknown *or* foreign session -> close
   4404, the same way for both, so a socket can't probe which sessions exist. All are sent after
   accepting, because a refused handshake looks like a network error and the browser would retry
   forever.
2. Join the session's group *first*, then read Postgres: every event pushed after the join is
   either in that read or arrives afterwards, so nothing falls between the two.
3. Sync: with ``?last_seq=N`` in the URL (the page's resume point, which static/js/live.js puts
   there on every (re)connect) the events after N are replayed from Postgres; without it, or when
   N is invalid (negative, ahead of the session) or more than KANDEV_REPLAY_LIMIT events behind,
   a fresh snapshot is sent. A ``{"type": "resume", "last_seq": N}`` frame does the same at any
   time; ``{"type": "snapshot"}`` asks for a snapshot.
4. Live: group pushes with seq <= what this socket already sent are dropped (dedupe); a seq that
   skips ahead means a push was lost, so the missing events are read from Postgres. A lost push
   with nothing after it (a turn's last events, dropped by an overloaded box) has no later seq to
   show the gap: once the session has been quiet for KANDEV_WS_QUIET_CHECK_S after the sync or
   a live event, the socket reads the session's last seq once and catches up if it is behind.

The socket follows its login (socket_login.py): when the login ends (logout, deactivation, a new
password, the session revoked or expired) it closes with 4410, and every sync above re-checks the
login before it reads, so a socket whose login has ended is never sent another snapshot or replay.

Every frame sent is at most frames.MAX_FRAME_BYTES: a replay goes out as several frames of whole
events, and a frame still larger (a long transcript's snapshot, a long answer) in parts that
static/js/live.js joins (see frames.py).

Malformed frames (not JSON, nested deeper than socket_limits.MAX_FRAME_DEPTH, not an object,
unknown type, binary, larger than KANDEV_MAX_WS_FRAME_BYTES) get an error frame; the socket stays
open. Frames over Daphne's own limit (1 MiB) never get here: the transport closes with 1009.
Snapshot and resume requests cost a token of a per-socket bucket (KANDEV_WS_SYNC_BURST, refilled
at KANDEV_WS_SYNCS_PER_MINUTE): a client asking faster gets a ``rate_limited`` error frame, so one
page cannot make the server render snapshots as fast as it can send.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.contrib.auth.models import User

from sessions_app import metrics
from sessions_app.approvals.selectors import session_page_snapshot
from sessions_app.errors import SessionNotFound
from sessions_app.event_types import group_name
from sessions_app.frames import (
    MAX_FRAME_BYTES,
    error_frame,
    event_run_frame,
    frame_parts,
    replay_frames,
    snapshot_frame,
)
from sessions_app.models import Session
from sessions_app.selectors import events_after, session_for_user
from sessions_app.socket_limits import FrameRefused, TokenBucket, frame_parse
from sessions_app.socket_login import LoginBoundSocket

logger = logging.getLogger(__name__)

CLOSE_NOT_FOUND = 4404


def _query_last_seq(query_string: bytes) -> int | None:
    values = parse_qs(query_string.decode("latin-1")).get("last_seq")
    if not values:
        return None
    try:
        return int(values[0])
    except ValueError:
        return -1  # present but garbage: treated like any invalid resume point (snapshot)


class _FrameCache:
    """The frame of one live event (its parts on the wire), rendered once per process instead of
    once per viewer: all viewers of a session in this Daphne get the same bytes. Bounded in
    entries and in characters (a long answer's re-render is megabytes; the newest frame is always
    kept); only a cache, never state."""

    def __init__(self, *, size: int, max_chars: int) -> None:
        self._size = size
        self._max_chars = max_chars
        self._chars = 0
        self._frames: OrderedDict[tuple[int, int, str], list[str]] = OrderedDict()

    def frame(self, *, session_id: int, event: dict[str, Any]) -> list[str]:
        key = (session_id, event["seq"], event["event"])
        frame = self._frames.get(key)
        if frame is None:
            frame = frame_parts(event_run_frame(session_id=session_id, events=[event]))
            self._frames[key] = frame
            self._chars += sum(map(len, frame))
            while len(self._frames) > 1 and (
                len(self._frames) > self._size or self._chars > self._max_chars
            ):
                _, dropped = self._frames.popitem(last=False)
                self._chars -= sum(map(len, dropped))
        return frame


_live_frames = _FrameCache(size=512, max_chars=64 * MAX_FRAME_BYTES)


def _catch_up(
    *, session_id: int, after_seq: int
) -> tuple[str, list[dict[str, Any]] | dict[str, Any]]:
    """("events", [...]) when a replay after ``after_seq`` is possible, else ("snapshot", {...})."""
    session = Session.objects.get(pk=session_id)
    limit = settings.KANDEV_REPLAY_LIMIT
    if 0 <= after_seq <= session.last_seq:
        events = events_after(session=session, after_seq=after_seq, limit=limit + 1)
        if len(events) <= limit:
            return "events", events
    return "snapshot", session_page_snapshot(session=session)


async def _viewers_move(delta: int) -> None:
    # Off the event loop: a slow Redis must not hold up other sockets of this process.
    await sync_to_async(metrics.count, thread_sensitive=False)(metrics.CONNECTED_VIEWERS, delta)


def _last_seq(*, session_id: int) -> int | None:
    return Session.objects.filter(pk=session_id).values_list("last_seq", flat=True).first()


class SessionConsumer(LoginBoundSocket, AsyncWebsocketConsumer):
    session_id: int
    group: str | None = None
    # The highest seq this socket has brought the browser to; None until the first sync.
    sent_seq: int | None = None
    # The pending check that no push went missing since the last sync or live event.
    _quiet_check: asyncio.TimerHandle | None = None
    _verifying: asyncio.Task | None = None
    _verify_failing = False  # the last quiet check could not be sent

    def __init__(self, *args: Any, clock: Callable[[], float] = time.monotonic, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.sync_requests = TokenBucket(
            capacity=settings.KANDEV_WS_SYNC_BURST,
            per_second=settings.KANDEV_WS_SYNCS_PER_MINUTE / 60,
            clock=clock,
        )

    async def connect(self) -> None:
        self.session_id = int(self.scope["url_route"]["kwargs"]["session_id"])
        await self.accept()
        if not await self.login_admit():
            return
        user = self.scope["user"]
        assert isinstance(user, User)  # login_admit let only a signed-in user through
        try:
            await database_sync_to_async(session_for_user)(user=user, session_id=self.session_id)
        except SessionNotFound:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        self.group = group_name(self.session_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await _viewers_move(1)
        last_seq = _query_last_seq(self.scope.get("query_string", b""))
        await self.sync(after_seq=last_seq)
        self._check_when_quiet()  # a push lost between the read and the first live event too

    async def disconnect(self, code: int) -> None:
        if self._quiet_check is not None:
            self._quiet_check.cancel()
            self._quiet_check = None
        if self._verifying is not None:
            self._verifying.cancel()
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            await _viewers_move(-1)
        await self.login_leave()

    def _check_when_quiet(self) -> None:
        """(Re)schedule the quiet check KANDEV_WS_QUIET_CHECK_S from now: one timer per socket,
        moved by every live event, so a busy session costs no checks and a quiet one one."""
        if self._quiet_check is not None:
            self._quiet_check.cancel()
        self._quiet_check = asyncio.get_running_loop().call_later(
            settings.KANDEV_WS_QUIET_CHECK_S, self._quiet_due
        )

    def _quiet_due(self) -> None:
        # Held here: the loop keeps only a weak reference to a task.
        self._verifying = asyncio.get_running_loop().create_task(self._ask_verify())

    async def _ask_verify(self) -> None:
        """Through this consumer's own channel, so the check runs between messages and never
        inside another frame's parts."""
        self._quiet_check = None
        try:
            await self.channel_layer.send(self.channel_name, {"type": "session.verify"})
        except Exception:  # noqa: BLE001 - Redis away, or this process's inbox full (ChannelFull)
            # Asked again after another quiet interval: an overloaded box drops pushes and this
            # check alike, and a quiet session has no later event to catch up with. Logged once.
            if not self._verify_failing:
                logger.warning("quiet check of session %s not sent; asking again", self.session_id)
            self._verify_failing = True
            self._check_when_quiet()
        else:
            self._verify_failing = False

    async def session_verify(self, message: dict[str, Any]) -> None:
        last = await database_sync_to_async(_last_seq)(session_id=self.session_id)
        if last is not None and self.sent_seq is not None and last > self.sent_seq:
            await self.sync(after_seq=self.sent_seq)

    async def sync(self, *, after_seq: int | None) -> None:
        """Bring the browser from ``after_seq`` (None: from nothing) to the present, if the
        login still holds (else the socket is closed with 4410 and nothing is read)."""
        if not await self.login_still_current():
            return
        data: list[dict[str, Any]] | dict[str, Any]
        if after_seq is None:
            data = await database_sync_to_async(self._snapshot)()
        else:
            _, data = await database_sync_to_async(_catch_up)(
                session_id=self.session_id, after_seq=after_seq
            )
        if isinstance(data, dict):  # a snapshot: from nothing, or too far behind to replay
            await self._send_parts(frame_parts(snapshot_frame(snapshot=data)))
            self.sent_seq = data["last_seq"]
            return
        if data:
            for frame in replay_frames(session_id=self.session_id, events=data):
                await self._send_parts(frame_parts(frame))
            self.sent_seq = data[-1]["seq"]
        else:
            self.sent_seq = after_seq

    def _snapshot(self) -> dict[str, Any]:
        return session_page_snapshot(session=Session.objects.get(pk=self.session_id))

    async def session_event(self, message: dict[str, Any]) -> None:
        seq = message["seq"]
        if self.login_closed or self.sent_seq is None or seq <= self.sent_seq:
            return  # already covered by the snapshot or replay this socket sent
        if seq > self.sent_seq + 1:
            await self.sync(after_seq=self.sent_seq)
            return
        event = {"seq": seq, "event": message["event"], "payload": message["payload"]}
        await self._send_parts(_live_frames.frame(session_id=self.session_id, event=event))
        self.sent_seq = seq
        self._check_when_quiet()

    async def _send_parts(self, parts: list[str]) -> None:
        """One frame's parts (frames.frame_parts), back to back: nothing else is sent between
        them, since a consumer handles one message at a time."""
        for part in parts:
            await self.send(text_data=part)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.sent_seq is None or self.login_closed:
            return  # closing (refused) socket; nothing to answer
        size = len(bytes_data) if bytes_data is not None else len((text_data or "").encode())
        if size > settings.KANDEV_MAX_WS_FRAME_BYTES:
            await self._error("too_large", "Frame is larger than the server accepts.")
            return
        if bytes_data is not None:
            await self._error("binary", "Binary frames are not supported.")
            return
        try:
            frame = frame_parse(text_data or "")
        except FrameRefused as refused:
            await self._error(refused.code, refused.message)
            return
        await self._dispatch(frame)

    async def _dispatch(self, frame: dict[str, Any]) -> None:
        kind = frame.get("type")
        if kind in ("resume", "snapshot") and not self.sync_requests.take():
            wait = max(1, round(self.sync_requests.seconds_until_next()))
            await self._error("rate_limited", f"Too many snapshot requests; ask again in {wait} s.")
            return
        if kind == "resume":
            last_seq = frame.get("last_seq")
            if not isinstance(last_seq, int) or isinstance(last_seq, bool):
                await self._error("bad_resume", "resume needs an integer last_seq.")
                return
            await self.sync(after_seq=last_seq)
        elif kind == "snapshot":
            await self.sync(after_seq=None)
        else:
            await self._error("unknown_type", "Unknown frame type.")

    async def _error(self, code: str, message: str) -> None:
        await self.send(text_data=error_frame(code=code, message=message))
