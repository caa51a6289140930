"""Cursor's RetriableError frames (requirements AC .12 and .14): any non-empty suffix of at most
256 UTF-8 bytes is a transport frame, in the catalogue and in the stream shaper alike, unless it
carries cancellation words or names a spent quota or a refused credential."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from recovery.catalogue.model import CANCELLATION_WORDS
from recovery.catalogue.signatures import CURSOR_SUFFIX_LIMIT_BYTES
from recovery.classify import classify
from recovery.providers.acp.shaping import is_held_cursor_frame
from recovery.taxonomy import Code, Evidence, Source

_HARD_WORDS = ("quota", "authentication required", "invalid api key", "unauthenticated")


def frame_code(text: str) -> Code:
    return classify(Evidence(source=Source.ACP_CHUNK, excerpt=text)).code


def plain_suffix(text: str) -> bool:
    lowered = text.lower()
    return (
        bool(text.strip())
        and CANCELLATION_WORDS.search(text) is None
        and not any(word in lowered for word in _HARD_WORDS)
        and "[resource_exhausted] error" != lowered.strip()
    )


SUFFIX = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=60
).filter(plain_suffix)  # at most 60 characters: within 256 UTF-8 bytes whatever they are


@given(suffix=SUFFIX)
def test_any_short_suffix_is_a_transport_frame_in_both_layers(suffix):
    frame = f"Error: RetriableError: {suffix}"

    assert frame_code(frame) is Code.AGENT_TRANSPORT_LOST
    assert is_held_cursor_frame(frame)


@given(suffix=SUFFIX, before=st.booleans())
def test_the_canceled_marker_stays_eligible(suffix, before):
    marked = f"[canceled] {suffix}" if before else f"{suffix} [canceled]"
    frame = f"  error: RETRIABLEERROR: {marked}  "

    assert frame_code(frame) is Code.AGENT_TRANSPORT_LOST
    assert is_held_cursor_frame(frame)


def test_the_byte_bound_counts_utf8_bytes_not_characters():
    fits = "é" * (CURSOR_SUFFIX_LIMIT_BYTES // 2)  # 256 bytes
    too_long = fits + "x"

    assert frame_code(f"Error: RetriableError: {fits}") is Code.AGENT_TRANSPORT_LOST
    assert frame_code(f"Error: RetriableError: {too_long}") is Code.UNCLASSIFIED
    assert not is_held_cursor_frame(f"Error: RetriableError: {too_long}")


def test_hard_causes_are_neither_transient_nor_held():
    for frame, code in [
        ("Error: RetriableError: [resource_exhausted] quota exceeded", Code.QUOTA_LIMITED),
        ("Error: RetriableError: [unavailable] authentication required", Code.AUTH_REQUIRED),
        ("Error: RetriableError: [resource_exhausted] invalid API key", Code.AUTH_REQUIRED),
    ]:
        assert frame_code(frame) is code
        assert not is_held_cursor_frame(frame)


def test_cancellation_words_keep_their_veto():
    for frame in (
        "Error: RetriableError: [canceled] context canceled",
        "Error: RetriableError: Connection stalled: context deadline exceeded",
        "Error: RetriableError: cancel escalated",
    ):
        assert frame_code(frame) is Code.UNCLASSIFIED
        assert not is_held_cursor_frame(frame)
