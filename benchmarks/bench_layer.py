"""A Daphne process's inbox: how fast one process takes its websockets' messages off Redis,
channels_redis' own receive against ours (kandev_web.channel_layer), side by side in one run.

    python -m benchmarks.bench_layer

Every message for every websocket of one Daphne process lands in one Redis key, the process's
inbox, and the process reads it on one connection, one message after another (a group message
is one entry for all of the process's members of that group). Each round here fills such an
inbox as a streaming box does: SESSIONS groups of VIEWERS channels each, PER_SESSION events per
group (an event frame's size) sent by another layer's group_send_many as the push sends them,
so SESSIONS * PER_SESSION entries; then one receiver per channel (as one consumer per
websocket) drains it. The time runs from the first receive to the last message received.
Rounds alternate between the two layers, so machine load hits both alike; reported are the
medians and their ratio.

The target is a ratio: what we add is batching (one ZPOPMIN for up to 100 messages, where
channels_redis makes four round trips per message), so the same work must drain at least
RATIO_FLOOR times as fast. An inbox that drains slower than the pushes arrive fills up, and a
full inbox drops messages (ChannelFull). benchmarks/README.md says why.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
import uuid

from channels_redis.core import RedisChannelLayer as ChannelsRedisLayer

SESSIONS = 100
VIEWERS = 2  # per session
PER_SESSION = 50
ENTRIES = SESSIONS * PER_SESSION
ROUNDS = 3  # pairs, alternating
FRAME = "x" * 600  # about an appended delta's rendered frame
RATIO_FLOOR = 2.0


def _config() -> dict:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kandev_web.settings")
    from django.conf import settings

    config = dict(settings.CHANNEL_LAYERS["default"]["CONFIG"])
    config["prefix"] = f"benchlayer{uuid.uuid4().hex[:8]}"
    config["capacity"] = ENTRIES + 1  # every entry fits: this measures reading, not dropping
    return config


async def _drain_s(layer_class: type) -> float:
    from kandev_web.channel_layer import RedisChannelLayer

    config = _config()
    receiving, sending = layer_class(**config), RedisChannelLayer(**config)
    groups = [f"bench-layer-{n}" for n in range(SESSIONS)]
    channels = []
    for group in groups:
        for _ in range(VIEWERS):
            channels.append(channel := await receiving.new_channel())
            await receiving.group_add(group, channel)
    for n in range(PER_SESSION):
        await sending.group_send_many(
            [(group, {"type": "session.event", "n": n, "html": FRAME}) for group in groups]
        )

    async def viewer(channel: str) -> None:
        for n in range(PER_SESSION):
            message = await receiving.receive(channel)
            assert message["n"] == n, (channel, n, message["n"])  # in order, none lost

    started = time.perf_counter()
    await asyncio.gather(*(viewer(channel) for channel in channels))
    elapsed = time.perf_counter() - started
    await receiving.flush()
    await sending.close_pools()
    return elapsed


def run() -> list[dict]:
    from kandev_web.channel_layer import RedisChannelLayer

    times: dict[type, list[float]] = {ChannelsRedisLayer: [], RedisChannelLayer: []}
    for _ in range(ROUNDS):
        for layer_class in times:
            times[layer_class].append(asyncio.run(_drain_s(layer_class)))
    plain_s = statistics.median(times[ChannelsRedisLayer])
    ours_s = statistics.median(times[RedisChannelLayer])
    ratio = plain_s / ours_s
    return [
        {
            "metric": (
                f"inbox entries/s, {SESSIONS} sessions x {VIEWERS} viewers: channels_redis / ours"
            ),
            "value": f"{ENTRIES / plain_s:,.0f} / {ENTRIES / ours_s:,.0f}",
            "target": "-",
        },
        {
            "metric": "inbox drain speed: ours over channels_redis",
            "value": f"{ratio:.2f}x",
            "target": f">= {RATIO_FLOOR:g}x",
            "ok": ratio >= RATIO_FLOOR,
        },
    ]


if __name__ == "__main__":
    for row in run():
        print(row)
