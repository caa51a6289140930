"""Coalescing with an injected clock: exactly when the writer touches the database."""

from __future__ import annotations

import socket
from random import Random

import pytest

from recovery.clock import FakeClock
from sessions_app import event_types as ev
from sessions_app.agent import coalescer
from sessions_app.agent.coalescer import OpenStreams, StreamWriter
from sessions_app.agent.turn import Turn
from sessions_app.models import Message, SessionEvent
from sessions_app.push import push_drain
from sessions_app.services import event_append, generation_claim, prompt_submit
from tests.support.factories import SessionFactory

pytestmark = pytest.mark.django_db


def _writer(session, owner, clock, streams=None, *, flushes_per_s=0.0):
    """A writer for a claimed generation of ``session`` (no shared budget unless given)."""
    generation = generation_claim(
        generation_id=prompt_submit(session=session, user=owner, text="go").pk
    )
    return StreamWriter(
        session=session, generation=generation, flush_interval_s=0.1, clock=clock,
        flushes_per_s=flushes_per_s, streams=streams or OpenStreams(),
    )  # fmt: skip


def streams_open(count: int) -> OpenStreams:
    """A count of open streams as if ``count`` other messages were streaming in this process."""
    streams = OpenStreams()
    for _ in range(count):
        streams.opened()
    return streams


@pytest.fixture
def writer_and_clock(session, owner):
    clock = FakeClock()
    return _writer(session, owner, clock), clock


def appended(session) -> list[dict]:
    return [
        e.payload for e in SessionEvent.objects.filter(session=session, type=ev.MESSAGE_APPENDED)
    ]


def test_the_first_delta_shows_at_once_and_later_ones_wait_for_the_interval(
    session, writer_and_clock
):
    writer, clock = writer_and_clock
    writer.delta(role="assistant", text="Hel")
    message = Message.objects.get(session=session, role="assistant")
    assert (message.text, message.status) == ("Hel", "streaming")

    clock.advance(0.04)
    writer.delta(role="assistant", text="lo")
    clock.advance(0.04)
    writer.delta(role="assistant", text=", ")
    assert appended(session) == []  # 80 ms since the last write: still buffered

    clock.advance(0.03)
    writer.delta(role="assistant", text="world")
    assert appended(session) == [{"id": message.pk, "offset": 3, "text": "lo, world"}]

    clock.advance(0.01)
    writer.delta(role="assistant", text="!")
    writer.close()
    message.refresh_from_db()
    assert (message.text, message.status, message.incomplete) == (
        "Hello, world!",
        "complete",
        False,
    )
    assert len(appended(session)) == 1  # the tail went out with the final write


def test_switching_from_thinking_to_text_closes_the_thinking_row(session, writer_and_clock):
    writer, _ = writer_and_clock
    writer.delta(role="thinking", text="hmm")
    writer.delta(role="assistant", text="Answer")
    writer.close(incomplete=True)
    rows = list(
        Message.objects.filter(session=session)
        .exclude(role="user")
        .values_list("role", "status", "incomplete")
    )
    assert rows == [("thinking", "complete", False), ("assistant", "complete", True)]


def test_a_failed_push_never_breaks_the_writer(
    session, settings, caplog, django_capture_on_commit_callbacks
):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        dead_port = probe.getsockname()[1]
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [f"redis://127.0.0.1:{dead_port}/0"]},
        }
    }
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        event = event_append(session=session, type=ev.SESSION_UPDATED, payload={"state": "idle"})
    assert len(callbacks) == 2  # the session's push and the owner's board hint
    assert push_drain()
    assert "push of session" in caplog.text  # it really failed, and was only logged
    assert "board push to user" in caplog.text
    assert SessionEvent.objects.get(pk=event.pk).seq == 1


def test_a_key_streamed_across_deltas_is_never_stored_or_pushed(session, writer_and_clock):
    writer, clock = writer_and_clock
    key = "sk-proj-" + "Vb7q" * 12
    text = f"Set OPENAI_API_KEY={key} and thinking {key} done."
    for start in range(0, len(text), 4):
        writer.delta(role="assistant", text=text[start : start + 4])
        clock.advance(0.2)
    writer.close()

    message = Message.objects.get(session=session, role="assistant")
    assert message.text == "Set OPENAI_API_KEY=[REDACTED] and thinking [REDACTED] done."
    assert not any("Vb7q" in payload["text"] for payload in appended(session))


def test_many_streams_at_once_share_the_processs_flush_budget(session, owner):
    """With 199 other streams open and a budget of 200 flushes/s, each flushes once a second."""
    clock, streams = FakeClock(), streams_open(199)
    writer = _writer(session, owner, clock, streams, flushes_per_s=200)
    writer.delta(role="assistant", text="Hel")
    assert streams.count == 200 and writer.interval_s == pytest.approx(1.0)

    for piece in ("lo", ", ", "wor", "ld"):  # 0.2 s apart: past the base interval, within 1 s
        clock.advance(0.2)
        writer.delta(role="assistant", text=piece)
    assert appended(session) == []
    clock.advance(0.2)
    writer.delta(role="assistant", text="!")
    message = Message.objects.get(session=session, role="assistant")
    assert appended(session) == [{"id": message.pk, "offset": 3, "text": "lo, world!"}]

    writer.close()
    assert streams.count == 199  # its own stream no longer counts
    message.refresh_from_db()
    assert message.text == "Hello, world!"


def test_a_few_streams_keep_the_base_interval_and_no_budget_means_no_sharing(session, owner):
    clock, streams = FakeClock(), streams_open(9)
    writer = _writer(session, owner, clock, streams, flushes_per_s=200)
    writer.delta(role="assistant", text="a")
    assert writer.interval_s == pytest.approx(0.1)  # 10 streams / 200 per s = 0.05 s < 0.1 s
    for _ in range(1000):
        streams.opened()
    unlimited = _writer(SessionFactory(owner=owner, target=session.target), owner, clock, streams)
    assert unlimited.interval_s == pytest.approx(0.1)


def test_a_stream_that_fails_to_finish_still_stops_counting(session, owner, monkeypatch):
    clock, streams = FakeClock(), OpenStreams()
    writer = _writer(session, owner, clock, streams, flushes_per_s=200)
    writer.delta(role="assistant", text="partial")
    assert streams.count == 1

    def finish_fails(**kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(coalescer, "message_finish", finish_fails)
    with pytest.raises(RuntimeError):
        writer.close()
    assert streams.count == 0


def test_each_worker_process_of_the_box_takes_an_equal_share_of_the_budget(
    session, owner, settings
):
    """`make run` starts a worker per core and tells each how many there are: the box's Daphne
    then gets the same number of flushes to send however many workers stream."""
    settings.KANDEV_STREAM_FLUSHES_PER_S = 100.0
    settings.KANDEV_WORKER_PROCESSES = 2
    generation = prompt_submit(session=session, user=owner, text="go")
    turn = Turn(generation=generation, target=session.target, clock=FakeClock(), rng=Random(1))
    assert turn.writer.flushes_per_s == pytest.approx(50.0)
