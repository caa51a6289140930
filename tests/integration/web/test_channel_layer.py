"""kandev_web/channel_layer.py against real Redis. group_send_many delivers what channels_redis'
own group_send delivers, in the order given, in two round trips per batch; a process's inbox is
received as channels_redis receives it, in batches, and a cancelled receive loses nothing."""

from __future__ import annotations

import asyncio
import logging
import uuid

import pytest
from channels_redis.core import RedisChannelLayer as ChannelsRedisLayer
from django.conf import settings
from redis.exceptions import ResponseError

from devtools.eventually import eventually_async
from kandev_web.channel_layer import RECEIVE_BATCH, RedisChannelLayer


def base_config(**config) -> dict:
    base = settings.CHANNEL_LAYERS["default"]["CONFIG"]
    return {**base, "prefix": f"cl{uuid.uuid4().hex[:8]}", **config}


def layer_with(**config) -> RedisChannelLayer:
    return RedisChannelLayer(**base_config(**config))


def layer_named(client_name: str) -> RedisChannelLayer:
    """A layer whose Redis connections carry ``client_name`` (CLIENT SETNAME), so CLIENT LIST
    tells them from every other client of the server."""
    (address,) = settings.CHANNEL_LAYERS["default"]["CONFIG"]["hosts"]
    return layer_with(hosts=[{"address": address, "client_name": client_name}])


async def blocked_in_bzpopmin(layer: RedisChannelLayer, client_name: str) -> list[dict]:
    """The layer's connections that Redis itself shows blocked in BZPOPMIN."""
    clients = await layer.connection(0).client_list(_type="normal")
    return [
        client
        for client in clients
        if client["name"] == client_name and client["cmd"] == "bzpopmin" and "b" in client["flags"]
    ]


async def take_blocked(layer: RedisChannelLayer, client_name: str) -> None:
    await eventually_async(
        lambda: blocked_in_bzpopmin(layer, client_name),
        timeout=5,
        what="the take blocked in BZPOPMIN on the empty inbox",
    )


async def members(layer: RedisChannelLayer, group: str, count: int) -> list[str]:
    channels = [await layer.new_channel() for _ in range(count)]
    for channel in channels:
        await layer.group_add(group, channel)
    return channels


async def test_each_member_gets_each_message_in_the_order_sent():
    layer = layer_with()
    first, second = await members(layer, "one", 2), await members(layer, "two", 1)
    await layer.group_send_many([
        ("one", {"type": "e", "n": 1}), ("two", {"type": "e", "n": 2}),
        ("one", {"type": "e", "n": 3}), ("nobody", {"type": "e", "n": 4}),
    ])  # fmt: skip
    for channel in first:
        assert [(await layer.receive(channel))["n"] for _ in range(2)] == [1, 3]
    assert (await layer.receive(second[0]))["n"] == 2
    await layer.flush()


async def test_it_delivers_what_group_send_delivers():
    plain, batched = layer_with(), layer_with()
    (a,), (b,) = await members(plain, "g", 1), await members(batched, "g", 1)
    message = {"type": "session.event", "seq": 7, "payload": {"text": "héllo"}}
    await plain.group_send("g", message)
    await batched.group_send_many([("g", message)])
    assert await batched.receive(b) == await plain.receive(a) == message
    await plain.flush()
    await batched.flush()


async def test_a_full_channel_drops_the_message_as_group_send_does(caplog):
    layer = layer_with(capacity=2)
    (channel,) = await members(layer, "g", 1)
    with caplog.at_level(logging.INFO, logger="kandev_web.channel_layer"):
        await layer.group_send_many([("g", {"type": "e", "n": n}) for n in range(3)])
    assert "1 channel(s) over capacity in group g" in caplog.text
    assert [(await layer.receive(channel))["n"] for _ in range(2)] == [0, 1]
    await layer.flush()


async def test_on_several_redis_hosts_it_sends_one_by_one():
    url = settings.REDIS["channels"]
    layer = layer_with(hosts=[url, url])  # a ring of two: groups hash over both
    channels = await members(layer, "g", 2)
    await layer.group_send_many([("g", {"type": "e", "n": 1}), ("g", {"type": "e", "n": 2})])
    for channel in channels:
        assert [(await layer.receive(channel))["n"] for _ in range(2)] == [1, 2]
    await layer.flush()


async def test_a_bad_group_name_is_refused_before_anything_is_sent():
    layer = layer_with()
    (channel,) = await members(layer, "g", 1)
    with pytest.raises(TypeError, match="Group name must be"):
        await layer.group_send_many([("g", {"type": "e"}), ("no spaces allowed", {"type": "e"})])
    await layer.group_send("g", {"type": "e", "n": "later"})
    assert (await layer.receive(channel))["n"] == "later"  # nothing of the refused batch went
    await layer.flush()


# ---- receiving a process's inbox in batches ----------------------------------------------------


def counting_takes(layer: RedisChannelLayer) -> list[int]:
    """Record the inbox length after each of the layer's round trips to take messages."""
    takes: list[int] = []
    original = layer._take

    async def take(channel, inbox):
        await original(channel, inbox)
        takes.append(len(inbox))

    layer._take = take
    return takes


async def test_a_process_receives_every_message_once_in_order_in_batches():
    layer = layer_with()
    channels = [await layer.new_channel() for _ in range(3)]
    sent = 2 * RECEIVE_BATCH + 50
    for n in range(sent):
        await layer.send(channels[n % 3], {"type": "e", "n": n})
    takes = counting_takes(layer)

    got = {channel: [] for channel in channels}
    for n in range(sent):
        channel = channels[n % 3]
        got[channel].append((await layer.receive(channel))["n"])

    assert got == {c: list(range(i, sent, 3)) for i, c in enumerate(channels)}
    assert len(takes) == 3  # 100 + 100 + 50, where channels_redis makes 4 round trips a message
    await layer.flush()


async def test_it_receives_what_channels_redis_receives():
    plain, batched = ChannelsRedisLayer(**base_config()), layer_with()
    message = {"type": "session.event", "seq": 7, "payload": {"text": "héllo", "n": [1, 2]}}
    a, b = await plain.new_channel(), await batched.new_channel()
    await plain.send(a, message)
    await batched.send(b, message)
    assert await batched.receive(b) == await plain.receive(a) == message
    await plain.flush()
    await batched.flush()


async def test_a_receive_cancelled_while_waiting_loses_nothing():
    name = f"take-{uuid.uuid4().hex[:8]}"
    layer = layer_named(name)
    channel = await layer.new_channel()
    waiting = asyncio.ensure_future(layer.receive(channel))
    await take_blocked(layer, name)
    waiting.cancel()  # the websocket closed
    await layer.send(channel, {"type": "e", "n": 1})  # arrives while the take still waits

    assert (await asyncio.wait_for(layer.receive(channel), 5))["n"] == 1
    await layer.flush()


async def test_a_redis_error_reaches_the_receiver_and_the_next_receive_works():
    layer = layer_with()
    channel = await layer.new_channel()
    inbox_key = layer.prefix + layer.non_local_name(channel)
    redis = layer.connection(0)
    await redis.set(inbox_key, "not a sorted set")  # ZPOPMIN answers WRONGTYPE

    with pytest.raises(ResponseError, match="WRONGTYPE"):
        await layer.receive(channel)
    await redis.delete(inbox_key)
    await layer.send(channel, {"type": "e", "n": 2})
    assert (await layer.receive(channel))["n"] == 2
    await layer.flush()


async def test_closing_the_pools_stops_a_take_blocked_on_an_empty_inbox():
    name = f"take-{uuid.uuid4().hex[:8]}"
    layer = layer_named(name)
    channel = await layer.new_channel()
    waiting = asyncio.ensure_future(layer.receive(channel))
    await take_blocked(layer, name)
    waiting.cancel()

    await asyncio.wait_for(layer.close_pools(), 2)  # not the 5 s BZPOPMIN timeout
    assert layer._takes == {}


async def test_a_named_channel_is_received_as_channels_redis_does():
    layer = layer_with()
    await layer.send("plain-channel", {"type": "e", "n": 3})
    assert (await layer.receive("plain-channel"))["n"] == 3
    assert layer._takes == {}
    await layer.flush()
