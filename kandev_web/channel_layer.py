"""The channel layer: channels_redis, plus sending to many groups at once.

A worker streaming 200 sessions pushes about a hundred events a second. channels_redis sends each
group message in four Redis round trips (expire the group's members, read them, expire the
channels' old messages, run the delivery script), and every round trip is one more wake-up of the
process's push loop, which shares the GIL with hundreds of turn threads. ``group_send_many``
sends a whole batch in two round trips: one pipeline reads every group's members, one delivers
every message, in the order given (Redis runs a pipeline in order, so a group's messages keep
theirs). Delivery is the library's own: the same keys, the same per-channel capacity rule, the
same message format, so the websocket consumers (plain ``receive``) read them as any other.

It relies on channels_redis internals (``_group_key``, ``_map_channel_keys_to_connection``, the
delivery script's contract); the version is pinned in uv.lock and
tests/integration/web/test_channel_layer.py holds this to what ``group_send`` does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from channels_redis.core import RedisChannelLayer as _RedisChannelLayer

logger = logging.getLogger(__name__)

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
