"""Property tests: decoding arbitrary bytes and error bodies raises only typed errors, and a
planted credential never survives into evidence."""

from __future__ import annotations

import itertools
import json

import httpx2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recovery.clock import FakeClock
from recovery.providers.anthropic import AnthropicDecoder
from recovery.providers.failures import retry_after_ms, status_failure, stream_error_failure
from recovery.providers.httpwire import SSEResponseStream
from recovery.providers.openai_compat import OpenAIDecoder
from recovery.providers.sse import SSEDecoder
from recovery.taxonomy import ProviderFailure

PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ANTHROPIC_EVENTS = [
    (
        b'event: message_start\ndata: {"type":"message_start",'
        b'"message":{"usage":{"input_tokens":3}}}\n\n'
    ),
    (
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        b'"content_block":{"type":"text","text":""}}\n\n'
    ),
    (
        b'event: content_block_start\ndata: {"type":"content_block_start","index":1,'
        b'"content_block":{"type":"tool_use","id":"t","name":"n","input":{}}}\n\n'
    ),
    (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"hi"}}\n\n'
    ),
    (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,'
        b'"delta":{"type":"input_json_delta","partial_json":"{\\"a\\""}}\n\n'
    ),
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":1}\n\n',
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    b'event: ping\ndata: {"type":"ping"}\n\n',
    (
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
        b'"usage":{"output_tokens":2}}\n\n'
    ),
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    (
        b'event: error\ndata: {"type":"error",'
        b'"error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    ),
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":null}\n\n',
    b"data: [1, 2]\n\n",
    b"\xff\xfe",
]
OPENAI_EVENTS = [
    b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n',
    b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n',
    (
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c",'
        b'"function":{"name":"n","arguments":"{\\"a"}}]}}]}\n\n'
    ),
    (
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,'
        b'"function":{"arguments":"\\": 1}"}}]}}]}\n\n'
    ),
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n',
    b'data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":"x"}}\n\n',
    b'data: {"error":{"message":"overloaded","type":"server_error","code":502}}\n\n',
    b": ping\n\n",
    b"data: [DONE]\n\n",
    b'data: {"choices":[{"index":"zero"}]}\n\n',
]


def decode(chunks: list[bytes], decoder) -> list:
    response = httpx2.Response(200, content=iter(chunks))
    stream = SSEResponseStream(
        response=response, decoder=decoder, on_bytes=lambda n: None, provider_id="test", model="m"
    )
    return list(stream.items())


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts})
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges) if b > a]


@PROPERTY
@given(
    st.lists(st.sampled_from(ANTHROPIC_EVENTS) | st.binary(max_size=40), max_size=12),
    st.lists(st.integers(0, 2000), max_size=8),
)
def test_anthropic_decoding_of_any_byte_stream_raises_only_provider_failures(events, cuts) -> None:
    try:
        items = decode(split(b"".join(events), cuts), AnthropicDecoder(model="m"))
    except ProviderFailure:
        return
    assert type(items[-1]).__name__ == "TurnEnd"  # success only with the terminal event


@PROPERTY
@given(
    st.lists(st.sampled_from(OPENAI_EVENTS) | st.binary(max_size=40), max_size=12),
    st.lists(st.integers(0, 2000), max_size=8),
)
def test_openai_decoding_of_any_byte_stream_raises_only_provider_failures(events, cuts) -> None:
    try:
        items = decode(split(b"".join(events), cuts), OpenAIDecoder(model="m"))
    except ProviderFailure:
        return
    assert type(items[-1]).__name__ == "TurnEnd"


@PROPERTY
@given(
    st.lists(st.sampled_from(ANTHROPIC_EVENTS[:10]), max_size=10),
    st.lists(st.integers(0, 3000), max_size=10),
    st.sampled_from([b"\n", b"\r\n", b"\r"]),
)
def test_sse_framing_does_not_depend_on_chunk_boundaries_or_line_endings(
    events, cuts, newline
) -> None:
    data = b"".join(events).replace(b"\n", newline)
    once = SSEDecoder()
    whole = once.feed(data) + once.finish()
    decoder = SSEDecoder()
    pieces = [
        event for chunk in split(data, cuts) for event in decoder.feed(chunk)
    ] + decoder.finish()
    assert pieces == whole
    assert len(whole) == len(events)


SECRET = "sk-ant-api03-" + "Zq8" * 12


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)


@PROPERTY
@given(
    st.integers(100, 599),
    json_values,
    st.dictionaries(
        st.sampled_from(
            [
                "retry-after",
                "retry-after-ms",
                "anthropic-ratelimit-tokens-reset",
                "x-ratelimit-reset-requests",
                "x-ratelimit-remaining-requests",
            ]
        ),
        st.text(max_size=20),
        max_size=4,
    ),
    st.booleans(),
)
def test_any_error_body_decodes_into_bounded_redacted_evidence(
    status, body, headers, plant
) -> None:
    payload = {"error": {"message": f"bad key {SECRET}", "detail": body}} if plant else body
    failure = status_failure(
        provider_id="anthropic",
        model="m",
        status=status,
        headers=headers,
        body=json.dumps(payload),
        clock=FakeClock(),
    )
    evidence = failure.evidence
    assert len(evidence.excerpt.encode()) <= 4096
    assert SECRET not in evidence.excerpt and SECRET not in str(failure)
    assert evidence.retry_after_ms is None or evidence.retry_after_ms >= 0
    in_stream = stream_error_failure(provider_id="openai", model="m", payload=payload, status=None)
    assert SECRET not in in_stream.evidence.excerpt


@PROPERTY
@given(st.binary(max_size=300))
def test_any_non_json_error_body_decodes_without_raising(raw) -> None:
    failure = status_failure(
        provider_id="openai",
        model="m",
        status=502,
        headers={},
        body=raw + SECRET.encode(),
        clock=FakeClock(),
    )
    assert SECRET not in failure.evidence.excerpt


def test_retry_after_reads_seconds_milliseconds_and_http_dates() -> None:
    clock = FakeClock(1_800_000_000.0)  # Fri, 15 Jan 2027 08:00:00 GMT
    assert retry_after_ms({"retry-after": "7"}, clock=clock) == 7000
    assert retry_after_ms({"retry-after": "0"}, clock=clock) == 0
    assert retry_after_ms({"retry-after-ms": "250", "retry-after": "9"}, clock=clock) == 250
    assert retry_after_ms({"retry-after": "Fri, 15 Jan 2027 08:00:30 GMT"}, clock=clock) == 30_000
    assert retry_after_ms({"retry-after": "Fri, 15 Jan 2027 07:59:00 GMT"}, clock=clock) == 0
    assert retry_after_ms({"retry-after": "soon"}, clock=clock) is None
    assert retry_after_ms({"retry-after": "-3"}, clock=clock) is None
    assert retry_after_ms({}, clock=clock) is None


def test_a_secret_straddling_the_redaction_cut_leaves_no_prefix_behind():
    from recovery.providers.failures import _REDACT_INPUT_CHARS, _redactable_prefix

    secret = "sk-ant-api03-" + "Q" * 40
    text = "x " * ((_REDACT_INPUT_CHARS - 8) // 2) + secret + " tail"
    prefix = _redactable_prefix(text)

    assert len(prefix) <= _REDACT_INPUT_CHARS
    assert "sk-ant" not in prefix and "QQQ" not in prefix
