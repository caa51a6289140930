"""Frames on the wire stay under frames.MAX_FRAME_BYTES: a replay is packed into frames of whole
events, and a frame still too large is cut into parts that join back into exactly that frame."""

from __future__ import annotations

import itertools
import re

import pytest

from sessions_app.frames import MAX_FRAME_BYTES, frame_parts, replay_frames

DAPHNE_LIMIT = 1_048_576  # Daphne refuses to send a websocket message larger than this
PART = re.compile(r"^<!--ws-part (\d+)/(\d+)-->")


def joined(parts: list[str]) -> str:
    """What live.js does with a frame's parts."""
    numbers = [PART.match(part).groups() for part in parts]
    assert numbers == [(str(i), str(len(parts))) for i in range(1, len(parts) + 1)]
    return "".join(PART.sub("", part, count=1) for part in parts)


def test_the_limit_is_well_under_daphnes():
    assert MAX_FRAME_BYTES <= DAPHNE_LIMIT // 2


def test_a_frame_that_fits_goes_out_whole():
    frame = "<span>" + "x" * (MAX_FRAME_BYTES - 100) + "</span>"
    assert frame_parts(frame) == [frame]


@pytest.mark.parametrize("unit", ["w1 ", "é", "計", "😀", "a😀é"])
def test_a_large_frame_is_cut_into_parts_under_the_limit_that_join_back(unit):
    frame = '<span id="ws-seq"></span>' + unit * (3 * DAPHNE_LIMIT // len(unit.encode()))

    parts = frame_parts(frame)

    assert len(parts) > 1
    assert max(len(part.encode()) for part in parts) <= MAX_FRAME_BYTES
    assert joined(parts) == frame  # no character is cut in two


def message_appended(seq: int, offset: int, text: str) -> dict:
    return {
        "seq": seq,
        "event": "message.appended",
        "payload": {"id": 7, "offset": offset, "text": text},
    }


def test_a_replay_is_packed_into_frames_of_whole_consecutive_events():
    pieces = ["ab" * 20_000] * 40  # 40 events of 40 kB: 1.6 MB in all
    events = [message_appended(seq, 40_000 * (seq - 1), text) for seq, text in enumerate(pieces, 1)]

    frames = replay_frames(session_id=1, events=events, now_ms=1)

    assert 6 <= len(frames) <= 10
    assert max(len(frame.encode()) for frame in frames) <= MAX_FRAME_BYTES
    ranges = [
        tuple(map(int, re.match(r'.*?data-from="(\d+)" data-seq="(\d+)"', f).groups()))
        for f in frames
    ]
    assert ranges[0][0] == 1 and ranges[-1][1] == 40
    assert all(later[0] == earlier[1] + 1 for earlier, later in itertools.pairwise(ranges))
    assert sum(frame.count("data-offset=") for frame in frames) == 40


def test_one_event_larger_than_the_limit_is_a_frame_of_its_own_for_parts():
    events = [
        message_appended(1, 0, "small"),
        message_appended(2, 5, "x" * (2 * MAX_FRAME_BYTES)),
        message_appended(3, 5 + 2 * MAX_FRAME_BYTES, "small"),
    ]

    frames = replay_frames(session_id=1, events=events, now_ms=1)

    assert [frame.count("data-offset=") for frame in frames] == [1, 1, 1]
    parts = frame_parts(frames[1])
    assert len(parts) == 3 and joined(parts) == frames[1]
