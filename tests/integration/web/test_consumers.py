"""The live session socket, through the real ASGI stack with Redis as the channel layer."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.test import override_settings

from sessions_app import event_types as ev
from sessions_app import metrics
from sessions_app.models import Message, Session, SessionEvent
from sessions_app.services import message_append, message_create, message_retract
from tests.integration.web.conftest import parse_header

pytestmark = pytest.mark.django_db(transaction=True)


@sync_to_async
def write_user_message(session: Session, text: str) -> Message:
    return message_create(session=session, generation=None, role=Message.Role.USER, text=text)


@sync_to_async
def last_seq(session: Session) -> int:
    return Session.objects.get(pk=session.pk).last_seq


async def connected(socket_for, user, path):
    socket = socket_for(user, path)
    connected, _ = await socket.connect()
    assert connected
    return socket


async def test_it_sends_a_snapshot_then_live_events_in_seq_order(socket_for, owner, session):
    await write_user_message(session, "first")
    socket = await connected(socket_for, owner, f"/ws/sessions/{session.pk}/")

    snapshot = await socket.receive_from()
    header = parse_header(snapshot)
    assert header["kind"] == "snapshot"
    assert header["last"] == await last_seq(session)
    assert ">first</div>" in snapshot and 'id="transcript"' in snapshot

    message = await write_user_message(session, "second")
    live = await socket.receive_from()
    assert parse_header(live) == {
        "kind": "events",
        "first": header["last"] + 1,
        "last": header["last"] + 1,
    }
    assert f'id="msg-{message.pk}"' in live and ">second</div>" in live
    await socket.disconnect()


async def test_it_escapes_markup_in_transcript_frames(socket_for, owner, session):
    socket = await connected(socket_for, owner, f"/ws/sessions/{session.pk}/")
    await socket.receive_from()
    await write_user_message(session, "<script>alert(1)</script>")
    frame = await socket.receive_from()
    assert "<script>" not in frame
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in frame
    await socket.disconnect()


async def test_an_anonymous_socket_is_closed_as_unauthenticated(socket_for, session):
    socket = socket_for(None, f"/ws/sessions/{session.pk}/")
    await socket.connect()
    assert await socket.receive_output() == {"type": "websocket.close", "code": 4401}


async def test_a_foreign_session_closes_exactly_like_an_unknown_one(socket_for, stranger, session):
    foreign = socket_for(stranger, f"/ws/sessions/{session.pk}/")
    await foreign.connect()
    foreign_output = await foreign.receive_output()

    unknown = socket_for(stranger, f"/ws/sessions/{session.pk + 10_000}/")
    await unknown.connect()
    unknown_output = await unknown.receive_output()

    assert foreign_output == unknown_output == {"type": "websocket.close", "code": 4404}
    assert await foreign.receive_nothing() and await unknown.receive_nothing()


async def test_a_socket_from_a_foreign_origin_is_refused(socket_for, owner, session):
    socket = socket_for(owner, f"/ws/sessions/{session.pk}/", origin=b"https://evil.example")
    connected, _ = await socket.connect()
    assert not connected


async def test_a_resume_point_in_the_url_replays_only_the_missed_events(socket_for, owner, session):
    await write_user_message(session, "seen")
    seen_up_to = await last_seq(session)
    missed = [await write_user_message(session, f"missed {n}") for n in range(3)]

    socket = await connected(socket_for, owner, f"/ws/sessions/{session.pk}/?last_seq={seen_up_to}")
    frame = await socket.receive_from()

    assert parse_header(frame) == {
        "kind": "events",
        "first": seen_up_to + 1,
        "last": seen_up_to + 3,
    }
    positions = [frame.index(f'id="msg-{m.pk}"') for m in missed]
    assert positions == sorted(positions)
    assert ">seen</div>" not in frame
    await socket.disconnect()


async def test_an_up_to_date_resume_sends_nothing_until_the_next_event(socket_for, owner, session):
    await write_user_message(session, "seen")
    now = await last_seq(session)
    socket = await connected(socket_for, owner, f"/ws/sessions/{session.pk}/?last_seq={now}")
    assert await socket.receive_nothing(timeout=0.3)
    await write_user_message(session, "next")
    assert parse_header(await socket.receive_from())["first"] == now + 1
    await socket.disconnect()


async def test_a_resume_frame_replays_after_the_given_seq(socket_for, owner, session):
    socket = await connected(socket_for, owner, f"/ws/sessions/{session.pk}/")
    await socket.receive_from()
    before = await last_seq(session)
    await write_user_message(session, "one")
    await socket.receive_from()

    await socket.send_to(text_data=json.dumps({"type": "resume", "last_seq": before}))
    replay = await socket.receive_from()
    assert parse_header(replay) == {"kind": "events", "first": before + 1, "last": before + 1}
    assert ">one</div>" in replay
    await socket.disconnect()


@override_settings(KANDEV_REPLAY_LIMIT=2)
async def test_a_gap_larger_than_the_replay_limit_gets_a_fresh_snapshot(socket_for, owner, session):
    for n in range(3):
        await write_user_message(session, f"message {n}")
    socket = await connected(socket_for, owner, f"/ws/sessions/{session.pk}/?last_seq=0")
    frame = await socket.receive_from()
    assert parse_header(frame) == {"kind": "snapshot", "first": 0, "last": await last_seq(session)}
    assert all(f">message {n}</div>" in frame for n in range(3))
    await socket.disconnect()


@pytest.mark.parametrize("resume_point", ["999999", "-1", "soon"])
async def test_an_invalid_resume_point_gets_a_fresh_snapshot(
    socket_for, owner, session, resume_point
):
    await write_user_message(session, "hello")
    socket = await connected(
        socket_for, owner, f"/ws/sessions/{session.pk}/?last_seq={resume_point}"
    )
    assert parse_header(await socket.receive_from())["kind"] == "snapshot"
    await socket.disconnect()


async def test_pushes_already_covered_by_the_snapshot_are_dropped(socket_for, owner, session):
    await write_user_message(session, "hello")
    socket = await connected(socket_for, owner, f"/ws/sessions/{session.pk}/")
    covered = parse_header(await socket.receive_from())["last"]

    layer = get_channel_layer()
    stale = {
        "type": "session.event",
        "seq": covered,
        "event": ev.MESSAGE_DELETED,
        "payload": {"ids": [1]},
    }
    await layer.group_send(ev.group_name(session.pk), stale)
    assert await socket.receive_nothing(timeout=0.3)

    fresh = await write_user_message(session, "after")
    frame = await socket.receive_from()
    assert parse_header(frame)["first"] == covered + 1 and f"msg-{fresh.pk}" in frame
    await socket.disconnect()


@sync_to_async
def write_event_without_push(session: Session) -> int:
    """What a lost push looks like from a viewer: the event is in Postgres, never on the socket."""
    row = Session.objects.get(pk=session.pk)
    seq = row.last_seq + 1
    Session.objects.filter(pk=session.pk).update(last_seq=seq)
    SessionEvent.objects.create(
        session=row, seq=seq, type=ev.GENERATION_UPDATED, payload={"number": 1, "state": "running"}
    )
    return seq


async def test_a_lost_push_is_filled_in_from_postgres(socket_for, owner, session):
    socket = await connected(socket_for, owner, f"/ws/sessions/{session.pk}/")
    covered = parse_header(await socket.receive_from())["last"]
    await write_event_without_push(session)
    await write_user_message(session, "after the gap")
    frame = await socket.receive_from()
    assert parse_header(frame) == {"kind": "events", "first": covered + 1, "last": covered + 2}
    assert ">after the gap</div>" in frame
    await socket.disconnect()


@override_settings(KANDEV_WS_QUIET_CHECK_S=0.2)
async def test_a_lost_last_push_is_caught_up_once_the_session_goes_quiet(
    socket_for, owner, session
):
    """The turn's last events were written but their pushes were lost (an overloaded box drops
    them after PUSH_TIMEOUT_S): there is no later event to reveal the gap, so the socket checks
    the session's last seq once things go quiet after a live event."""
    socket = await connected(socket_for, owner, f"/ws/sessions/{session.pk}/")
    await socket.receive_from()
    await write_user_message(session, "live")
    live = parse_header(await socket.receive_from())["last"]
    lost = await write_event_without_push(session)

    frame = await socket.receive_from(timeout=3)

    assert parse_header(frame) == {"kind": "events", "first": live + 1, "last": lost}
    assert await socket.receive_nothing(timeout=0.6)  # checked once, not over and over
    await socket.disconnect()


@override_settings(KANDEV_WS_QUIET_CHECK_S=0.2)
async def test_a_quiet_check_that_could_not_be_sent_is_asked_again(
    socket_for, owner, session, monkeypatch, caplog
):
    """An overloaded box drops the check like the pushes (its inbox full, or Redis away): the
    socket asks again after another quiet interval, and logs it once."""
    layer = get_channel_layer()
    send, refused = layer.send, []

    async def full_then_fine(channel, message):
        if message["type"] == "session.verify" and len(refused) < 2:
            refused.append(channel)
            raise layer.ChannelFull()
        await send(channel, message)

    monkeypatch.setattr(layer, "send", full_then_fine)
    socket = await connected(socket_for, owner, f"/ws/sessions/{session.pk}/")
    covered = parse_header(await socket.receive_from())["last"]
    lost = await write_event_without_push(session)

    frame = await socket.receive_from(timeout=3)

    assert len(refused) == 2
    assert parse_header(frame) == {"kind": "events", "first": covered + 1, "last": lost}
    assert caplog.text.count(f"quiet check of session {session.pk} not sent") == 1
    await socket.disconnect()


@override_settings(KANDEV_WS_QUIET_CHECK_S=0.2)
async def test_a_push_lost_right_after_connecting_is_caught_up_too(socket_for, owner, session):
    socket = await connected(socket_for, owner, f"/ws/sessions/{session.pk}/")
    covered = parse_header(await socket.receive_from())["last"]
    lost = await write_event_without_push(session)
    frame = await socket.receive_from(timeout=3)
    assert parse_header(frame) == {"kind": "events", "first": covered + 1, "last": lost}
    await socket.disconnect()


@sync_to_async
def stream_and_retract(session: Session) -> tuple[Message, int]:
    message = message_create(
        session=session,
        generation=None,
        role=Message.Role.ASSISTANT,
        text="",
        status=Message.Status.STREAMING,
    )
    message_append(message=message, text="Hello <b>")
    message_append(message=message, text="world")
    message_retract(session=session, ids=[message.pk])
    return message, Session.objects.get(pk=session.pk).last_seq


async def test_appends_carry_their_offsets_and_deletions_remove_rows(socket_for, owner, session):
    socket = await connected(socket_for, owner, f"/ws/sessions/{session.pk}/")
    await socket.receive_from()
    message, _ = await stream_and_retract(session)
    frames = [await socket.receive_from() for _ in range(4)]
    assert f'id="msg-{message.pk}"' in frames[0]
    assert (
        f'hx-swap-oob="beforeend:#msg-{message.pk}-text" data-offset="0" data-end="9">'
        "Hello &lt;b&gt;</span>"
    ) in frames[1]
    assert 'data-offset="9" data-end="14">world</span>' in frames[2]
    assert f'<div id="msg-{message.pk}" hx-swap-oob="delete"></div>' in frames[3]
    await socket.disconnect()


def error_code(frame: str) -> str:
    assert frame.startswith('<div id="ws-error" data-kind="error" data-code="'), frame[:80]
    return frame.split('data-code="', 1)[1].split('"', 1)[0]


@override_settings(KANDEV_MAX_WS_FRAME_BYTES=1024)
async def test_malformed_frames_get_an_error_frame_and_the_socket_stays_up(
    socket_for, owner, session
):
    socket = await connected(socket_for, owner, f"/ws/sessions/{session.pk}/")
    await socket.receive_from()
    cases = {
        "{not json": "bad_json",
        "[1, 2]": "bad_frame",
        json.dumps({"type": "launch-missiles"}): "unknown_type",
        json.dumps({"type": "resume", "last_seq": "3"}): "bad_resume",
        json.dumps({"type": "resume", "last_seq": True}): "bad_resume",
        json.dumps({"type": "resume", "pad": "x" * 2000}): "too_large",
    }
    for text, code in cases.items():
        await socket.send_to(text_data=text)
        assert error_code(await socket.receive_from()) == code
    await socket.send_to(bytes_data=b"\x00\x01")
    assert error_code(await socket.receive_from()) == "binary"

    await socket.send_to(text_data=json.dumps({"type": "snapshot"}))
    assert parse_header(await socket.receive_from())["kind"] == "snapshot"
    await socket.disconnect()


async def test_every_viewer_of_a_session_gets_the_same_live_frames(socket_for, owner, session):
    sockets = [await connected(socket_for, owner, f"/ws/sessions/{session.pk}/") for _ in range(3)]
    for socket in sockets:
        await socket.receive_from()
    await write_user_message(session, "to everyone")
    frames = {await socket.receive_from() for socket in sockets}
    assert len(frames) == 1 and ">to everyone</div>" in frames.pop()
    for socket in sockets:
        await socket.disconnect()


@sync_to_async
def viewers_counted() -> float:
    return sum(metrics.read_series(metrics.CONNECTED_VIEWERS).values())


async def test_connected_viewers_are_counted_up_and_down_for_the_metrics(
    socket_for, owner, stranger, session
):
    first = await connected(socket_for, owner, f"/ws/sessions/{session.pk}/")
    await first.receive_from()
    second = await connected(socket_for, owner, f"/ws/sessions/{session.pk}/")
    await second.receive_from()
    refused = await connected(socket_for, stranger, f"/ws/sessions/{session.pk}/")
    await refused.receive_output()  # closed 4404: a refused socket is no viewer
    assert await viewers_counted() == 2

    await first.disconnect()
    await second.disconnect()
    assert await viewers_counted() == 0
