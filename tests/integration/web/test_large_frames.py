"""A 5 MB answer through the real ASGI stack (Redis channel layer): snapshots, replays and live
events all reach the socket in frames under frames.MAX_FRAME_BYTES, and join back into the whole
answer. Daphne itself (and a real browser) is tests/e2e/test_large_answers.py."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import sync_to_async

from sessions_app.frames import MAX_FRAME_BYTES
from sessions_app.models import Message, Session
from sessions_app.services import message_append, message_create, message_finish
from tests.integration.web.conftest import parse_header

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER = "".join(f"w{i} " for i in range(700_000))  # 5.5 MB
CHUNK = 300_000  # characters per append: each append event is itself over the limit
PART = re.compile(r"^<!--ws-part (\d+)/(\d+)-->")
APPEND = re.compile(r'<span hx-swap-oob="beforeend:#msg-\d+-text" data-offset="(\d+)"[^>]*>')


@sync_to_async
def streamed_answer(session: Session, *, finish: bool = True) -> Message:
    """A user prompt, then the answer appended in CHUNK pieces and (unless told) finished."""
    message_create(session=session, generation=None, role=Message.Role.USER, text="/long")
    answer = message_create(
        session=session,
        generation=None,
        role=Message.Role.ASSISTANT,
        status=Message.Status.STREAMING,
    )
    for start in range(0, len(ANSWER), CHUNK):
        message_append(message=answer, text=ANSWER[start : start + CHUNK])
    if finish:
        message_finish(message=answer)
    return answer


@sync_to_async
def finish(answer: Message) -> None:
    message_finish(message=answer)


@sync_to_async
def last_seq(session: Session) -> int:
    return Session.objects.get(pk=session.pk).last_seq


async def frames_until(socket, seq: int) -> list[str]:
    """Whole frames (parts joined, as live.js joins them) until one brings the page to ``seq``;
    every message on the socket is checked against the limit on the way."""
    frames: list[str] = []
    parts: list[str] = []
    while True:
        message = await socket.receive_from(timeout=30)
        assert len(message.encode()) <= MAX_FRAME_BYTES
        part = PART.match(message)
        if part:
            parts.append(message[part.end() :])
            if part[1] != part[2]:
                continue
            message, parts = "".join(parts), []
        frames.append(message)
        if parse_header(message)["last"] >= seq:
            return frames


def appended_text(frames: list[str]) -> tuple[int, str]:
    """(the first offset, the text) that the frames' appends add to the answer, in order."""
    text, first = [], None
    for frame in frames:
        for match in APPEND.finditer(frame):
            first = int(match[1]) if first is None else first
            end = frame.index("</span>", match.end())
            text.append(frame[match.end() : end])
    return first, "".join(text)


async def test_a_replay_from_0_of_a_5mb_answer_comes_in_frames_under_the_limit(
    socket_for, owner, session
):
    await streamed_answer(session)
    target = await last_seq(session)
    socket = socket_for(owner, f"/ws/sessions/{session.pk}/?last_seq=0")
    assert (await socket.connect())[0]

    frames = await frames_until(socket, target)

    assert parse_header(frames[0])["first"] == 1 and len(frames) > 20
    assert appended_text(frames) == (0, ANSWER)
    finished = frames[-1]
    assert 'data-status="complete"' in finished and ANSWER.strip() in finished  # the re-render
    await socket.disconnect()


async def test_a_reconnect_from_the_middle_replays_only_the_rest(socket_for, owner, session):
    await streamed_answer(session)
    target = await last_seq(session)
    middle = target // 2
    socket = socket_for(owner, f"/ws/sessions/{session.pk}/?last_seq={middle}")
    assert (await socket.connect())[0]

    frames = await frames_until(socket, target)

    assert parse_header(frames[0])["first"] == middle + 1
    offset, text = appended_text(frames)
    assert offset > 0 and ANSWER[offset:] == text
    await socket.disconnect()


async def test_a_snapshot_of_a_5mb_transcript_joins_into_one_snapshot(socket_for, owner, session):
    await streamed_answer(session)
    target = await last_seq(session)
    socket = socket_for(owner, f"/ws/sessions/{session.pk}/")
    assert (await socket.connect())[0]

    [snapshot] = await frames_until(socket, target)

    assert parse_header(snapshot) == {"kind": "snapshot", "first": 0, "last": target}
    assert ANSWER.strip() in snapshot
    await socket.send_json_to({"type": "snapshot"})
    assert await frames_until(socket, target) == [snapshot]
    await socket.disconnect()


async def test_a_long_answer_finishing_live_reaches_two_viewers_in_parts(
    socket_for, owner, session
):
    answer = await streamed_answer(session, finish=False)
    target = await last_seq(session)
    viewers = [socket_for(owner, f"/ws/sessions/{session.pk}/?last_seq={target}") for _ in "ab"]
    for viewer in viewers:
        assert (await viewer.connect())[0]

    await finish(answer)

    seen = [await frames_until(viewer, target + 1) for viewer in viewers]
    assert seen[0] == seen[1]
    [finished] = seen[0]
    assert 'data-status="complete"' in finished and ANSWER.strip() in finished
    for viewer in viewers:
        await viewer.disconnect()


def test_the_live_frame_cache_holds_a_bounded_number_of_characters_and_the_newest_frame():
    from sessions_app.consumers import _FrameCache

    cache = _FrameCache(size=100, max_chars=3 * MAX_FRAME_BYTES)
    events = [
        {"seq": seq, "event": "message.appended", "payload": {"id": 1, "offset": 0, "text": text}}
        for seq, text in enumerate(["x" * (2 * MAX_FRAME_BYTES), "y" * (2 * MAX_FRAME_BYTES)], 1)
    ]

    first = cache.frame(session_id=1, event=events[0])
    second = cache.frame(session_id=1, event=events[1])

    assert len(first) == len(second) == 3  # parts
    assert cache.frame(session_id=1, event=events[1]) is second  # still cached
    assert cache.frame(session_id=1, event=events[0]) is not first  # evicted, rendered again
