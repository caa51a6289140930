"""group_send_many (kandev_web/channel_layer.py) against real Redis: what it delivers is what
channels_redis' own group_send delivers, in the order given, in two round trips per batch."""

from __future__ import annotations

import logging
import uuid

import pytest
from django.conf import settings

from kandev_web.channel_layer import RedisChannelLayer


def layer_with(**config) -> RedisChannelLayer:
    base = settings.CHANNEL_LAYERS["default"]["CONFIG"]
    return RedisChannelLayer(**{**base, "prefix": f"cl{uuid.uuid4().hex[:8]}", **config})


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
