"""The push loop (sessions_app/push.py): callers hand pushes over without waiting for them, one
group's pushes arrive in the order they were made, a loop that falls behind holds the writers
back, and a push that fails is logged and dropped."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from django.conf import settings

from kandev_web.channel_layer import RedisChannelLayer
from sessions_app import metrics, push
from sessions_app.event_types import group_name
from sessions_app.push import event_push, push_drain


class GatedLayer:
    """A channel layer whose sends wait until the test opens the gate."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.sent: list[tuple[str, dict]] = []

    async def group_send_many(self, sends) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.gate.wait, 10)
        self.sent += sends


def a_push(layer, n: int) -> push._Push:
    return push._Push(layer, "g", {"type": "e", "n": n}, ("push %s failed", n))


def test_many_pushes_to_one_session_arrive_in_the_order_made():
    # A reader of its own, used in one event loop (a channel layer's receive belongs to the loop
    # it first ran in); the pushes go through the process's layer and push loop.
    reader = RedisChannelLayer(**settings.CHANNEL_LAYERS["default"]["CONFIG"])

    def pushes() -> None:
        for seq in range(1, 101):
            event_push(session_id=4242, seq=seq, event="message.appended", payload={})
        assert push_drain()

    async def received() -> list[int]:
        channel = await reader.new_channel()
        await reader.group_add(group_name(4242), channel)
        await asyncio.to_thread(pushes)
        seqs = [(await reader.receive(channel))["seq"] for _ in range(100)]
        await reader.group_discard(group_name(4242), channel)
        return seqs

    assert asyncio.run(received()) == list(range(1, 101))


def test_a_loop_that_falls_behind_holds_the_writer_back(monkeypatch):
    monkeypatch.setattr(push, "MAX_IN_FLIGHT", 2)
    loop, layer = push._PushLoop(), GatedLayer()
    loop.send(a_push(layer, 1))
    loop.send(a_push(layer, 2))  # returns at once: there is room for two
    third = threading.Thread(target=loop.send, args=(a_push(layer, 3),))
    third.start()
    third.join(timeout=0.3)
    assert third.is_alive()  # no room until the first two are out
    layer.gate.set()
    third.join(timeout=10)
    assert not third.is_alive()
    assert loop.drain(timeout_s=10)
    assert [message["n"] for _, message in layer.sent] == [1, 2, 3]


def test_drain_says_when_pushes_are_still_out():
    loop, layer = push._PushLoop(), GatedLayer()
    loop.send(a_push(layer, 1))
    assert loop.drain(timeout_s=0.2) is False
    layer.gate.set()
    assert loop.drain(timeout_s=10) is True


def test_a_failed_batch_is_logged_push_by_push_and_the_loop_goes_on(caplog):
    class BrokenLayer:
        async def group_send_many(self, sends) -> None:
            raise ConnectionError("redis went away")

    loop, good = push._PushLoop(), GatedLayer()
    good.gate.set()
    loop.send(a_push(BrokenLayer(), 1))
    loop.send(a_push(BrokenLayer(), 2))
    assert loop.drain(timeout_s=10)
    assert "push 1 failed" in caplog.text and "push 2 failed" in caplog.text
    loop.send(a_push(good, 3))
    assert loop.drain(timeout_s=10)
    assert [message["n"] for _, message in good.sent] == [3]


def test_a_layer_without_batches_gets_its_pushes_one_by_one():
    class PlainLayer:
        def __init__(self) -> None:
            self.sent: list[int] = []

        async def group_send(self, group, message) -> None:
            self.sent.append(message["n"])

    loop, layer = push._PushLoop(), PlainLayer()
    for n in range(5):
        loop.send(a_push(layer, n))
    assert loop.drain(timeout_s=10)
    assert layer.sent == [0, 1, 2, 3, 4]


@pytest.mark.django_db
def test_the_push_latency_of_delivered_pushes_is_counted(redis_client):
    before = metrics.read_series(metrics.PUSH_LATENCY_SECONDS).get("[]|count", 0)
    for seq in range(3):
        event_push(session_id=4243, seq=seq, event="message.appended", payload={},
                   written_at=time.monotonic())  # fmt: skip
    assert push_drain()
    assert metrics.read_series(metrics.PUSH_LATENCY_SECONDS)["[]|count"] == before + 3


def test_a_worker_shutting_down_waits_for_its_last_pushes():
    from celery.signals import worker_shutdown

    import sessions_app.tasks  # noqa: F401 - connects the worker's shutdown handlers

    layer = GatedLayer()
    push._push_loop.send(a_push(layer, 1))
    threading.Timer(0.2, layer.gate.set).start()  # the send takes a while

    worker_shutdown.send(sender=None)

    assert layer.sent == [("g", {"type": "e", "n": 1})]
