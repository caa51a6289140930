"""Frame depth and the per-socket token bucket, without a socket."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessions_app.socket_limits import FrameRefused, TokenBucket, frame_depth_exceeds, frame_parse


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_nesting_up_to_the_limit_parses_and_one_more_is_refused():
    assert frame_parse('{"x": ' + nested(15) + "}", max_depth=16) == {"x": json.loads(nested(15))}
    with pytest.raises(FrameRefused) as refused:
        frame_parse('{"x": ' + nested(16) + "}", max_depth=16)
    assert refused.value.code == "too_deep"


def test_brackets_inside_strings_do_not_count():
    text = json.dumps({"type": "snapshot", "note": "[[[[{{{{" * 100, "q": 'say "[" \\ ok'})
    assert frame_parse(text, max_depth=2)["type"] == "snapshot"


@given(
    value=st.recursive(st.none() | st.text(), lambda c: st.lists(c) | st.dictionaries(st.text(), c))
)
def test_the_depth_scan_agrees_with_the_real_nesting_of_any_json(value):
    def depth(v) -> int:
        if isinstance(v, list):
            return 1 + max((depth(x) for x in v), default=0)
        if isinstance(v, dict):
            return 1 + max((depth(x) for x in v.values()), default=0)
        return 0

    text = json.dumps(value)
    assert frame_depth_exceeds(text, max_depth=3) == (depth(value) > 3)


@pytest.mark.parametrize(
    ("text", "code"), [("{nope", "bad_json"), ("[1, 2]", "bad_frame"), ('"s"', "bad_frame")]
)
def test_other_bad_frames_say_what_is_wrong(text, code):
    with pytest.raises(FrameRefused) as refused:
        frame_parse(text)
    assert refused.value.code == code


def test_the_bucket_allows_a_burst_then_refills_at_its_rate():
    now = [0.0]
    bucket = TokenBucket(capacity=3, per_second=0.5, clock=lambda: now[0])
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]
    assert bucket.seconds_until_next() == pytest.approx(2.0)
    now[0] += 1.9
    assert not bucket.take()
    now[0] += 0.1
    assert bucket.take() and not bucket.take()
    now[0] += 1000
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]  # never above capacity
