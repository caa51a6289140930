"""The channel layer: channels_redis, plus sending to many groups at once and receiving a
process's messages in batches.

A worker streaming 200 sessions pushes about a hundred events a second. channels_redis sends each
group message in four Redis round trips (expire the group's members, read them, expire the
channels' old messages, run the delivery script), and every round trip is one more wake-up of the
process's push loop, which shares the GIL with hundreds of turn threads. ``group_send_many``
sends a whole batch in two round trips: one pipeline reads every group's members, one delivers
every message, in the order given (Redis runs a pipeline in order, so a group's messages keep
theirs). Delivery is the library's own: the same keys, the same per-channel capacity rule, the
same message format, so the websocket consumers (plain ``receive``) read them as any other.

A Daphne process reads every one of its websockets' messages from one inbox key, and channels_redis
takes them off one at a time in four round trips each (restore a backup, BZPOPMIN, back the
message up, clear the backup). Under a streaming load that is the process's ceiling, and a full
inbox drops messages (ChannelFull). ``receive_single`` here takes up to ``RECEIVE_BATCH`` of them
in one ZPOPMIN (blocking in BZPOPMIN only when the inbox is empty) into a buffer of the layer's
own. The take runs in a task of its own that the caller's cancellation does not stop (a
websocket that closes cancels its receive), so what Redis handed over always reaches the buffer:
the guarantee channels_redis' backup queue gives, without its round trips. As with channels_redis'
own receive, one layer receives in one event loop.

It relies on channels_redis internals (``_group_key``, ``_map_channel_keys_to_connection``, the
layer's attributes, the delivery script's contract). It holds for the version in ``WRITTEN_FOR``
only: importing this module refuses any other, and a release without those names
(kandev_web/pinned_internals.py); tests/integration/web/test_channel_layer.py holds it to what
``group_send`` does.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from channels_redis.core import RedisChannelLayer as _RedisChannelLayer

from kandev_web.pinned_internals import Version, names_check, written_for_check

logger = logging.getLogger(__name__)

PATCH = "kandev_web/channel_layer.py"
WRITTEN_FOR = {"channels-redis": "4.3.0"}
# What this module calls or overrides of channels_redis' layer, and what it reads of an instance.
LAYER_METHODS = (
    "_group_key",
    "_map_channel_keys_to_connection",
    "connection",
    "consistent_hash",
    "deserialize",
    "receive_single",
    "close_pools",
    "group_send",
    "require_valid_channel_name",
    "require_valid_group_name",
)
LAYER_ATTRIBUTES = ("prefix", "expiry", "group_expiry", "brpop_timeout", "ring_size")


def channels_redis_check(
    *, version: Version = importlib.metadata.version, layer: type = _RedisChannelLayer
) -> None:
    """Refuses (UnpatchableDependency) a channels_redis this module was not written for."""
    written_for_check(patch=PATCH, written_for=WRITTEN_FOR, version=version)
    names_check(patch=PATCH, owner=layer, names=LAYER_METHODS)


channels_redis_check()

# Messages a process takes off its inbox per round trip.
RECEIVE_BATCH = 100

# Each channel key gets the message unless it already holds ``capacity`` of them (as channels_redis
# does); returns how many keys were full.
_DELIVER_LUA = """
local full = 0
local now = ARGV[#ARGV - 1]
local expiry = ARGV[#ARGV]
for i = 1, #KEYS do
    if redis.call('ZCOUNT', KEYS[i], '-inf', '+inf') < tonumber(ARGV[i + #KEYS]) then
        redis.call('ZADD', KEYS[i], now, ARGV[i])
        redis.call('EXPIRE', KEYS[i], expiry)
    else
        full = full + 1
    end
end
return full
"""


class RedisChannelLayer(_RedisChannelLayer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        names_check(patch=PATCH, owner=self, names=LAYER_ATTRIBUTES)
        self._inboxes: dict[str, deque[bytes]] = {}
        self._takes: dict[str, asyncio.Task[None]] = {}

    async def receive_single(self, channel: str) -> tuple[Any, dict[str, Any]]:
        """The next message of a process inbox (``prefix!``) from the layer's buffer, refilled
        in batches; any other channel as channels_redis receives it."""
        if "!" not in channel:
            return await super().receive_single(channel)
        assert self.require_valid_channel_name(channel, receive=True)
        inbox = self._inboxes.setdefault(channel, deque())
        while not inbox:
            take = self._takes.get(channel)
            if take is None:
                take = self._takes[channel] = asyncio.ensure_future(self._take(channel, inbox))
                take.add_done_callback(lambda done: self._take_done(channel, done))
            await asyncio.shield(take)
        return self._decoded(channel, inbox.popleft())

    async def _take(self, channel: str, inbox: deque[bytes]) -> None:
        connection = self.connection(self.consistent_hash(channel))
        key = self.prefix + channel
        taken = await connection.zpopmin(key, RECEIVE_BATCH)
        if taken:
            inbox.extend(member for member, _score in taken)
            return
        popped = await connection.bzpopmin(key, timeout=self.brpop_timeout)
        if popped is not None:
            inbox.append(popped[1])

    def _take_done(self, channel: str, done: asyncio.Task[None]) -> None:
        if self._takes.get(channel) is done:
            del self._takes[channel]
        if not done.cancelled():
            done.exception()  # retrieved: the waiting receive raises it, or nobody was waiting

    def _decoded(self, channel: str, content: bytes) -> tuple[Any, dict[str, Any]]:
        message = self.deserialize(content)
        # A message sent to a full channel name carries it (as channels_redis unpacks it).
        if "__asgi_channel__" in message:
            channel = message.pop("__asgi_channel__")
        return channel, message

    async def close_pools(self) -> None:
        """Stop any take still blocked on an empty inbox before the connections close."""
        takes = list(self._takes.values())
        for take in takes:
            take.cancel()
        await asyncio.gather(*takes, return_exceptions=True)
        await super().close_pools()

    async def group_send_many(self, sends: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """``group_send`` for each (group, message), in order, in two round trips in all."""
        if self.ring_size != 1:  # sharded over several Redis hosts: one by one
            for group, message in sends:
                await self.group_send(group, message)
            return
        for group, _ in sends:
            self.require_valid_group_name(group)  # raises TypeError, as group_send does
        connection = self.connection(0)
        groups = list(dict.fromkeys(group for group, _ in sends))
        now = time.time()
        read = connection.pipeline(transaction=False)
        for group in groups:
            key = self._group_key(group)
            read.zremrangebyscore(key, min=0, max=int(now) - self.group_expiry)
            read.zrange(key, 0, -1)
        replies = await read.execute()
        members = {
            group: [name.decode("utf8") for name in replies[2 * n + 1]]
            for n, group in enumerate(groups)
        }
        deliver = connection.pipeline(transaction=False)
        delivered: list[tuple[str, int]] = []
        for group, message in sends:
            if not members[group]:
                continue
            by_connection, payloads, capacities = self._map_channel_keys_to_connection(
                members[group], message
            )
            keys = by_connection[0]
            for key in keys:
                deliver.zremrangebyscore(key, min=0, max=int(now) - int(self.expiry))
            deliver.eval(
                _DELIVER_LUA, len(keys), *keys,
                *(payloads[key] for key in keys), *(capacities[key] for key in keys),
                time.time(), self.expiry,
            )  # fmt: skip
            delivered.append((group, len(keys)))
        if not delivered:
            return
        replies = await deliver.execute()
        # Each delivery is its expiries then its script: the script's reply is the last of them.
        at = 0
        for group, key_count in delivered:
            at += key_count + 1
            if full := replies[at - 1]:
                logger.info("%s channel(s) over capacity in group %s", full, group)
