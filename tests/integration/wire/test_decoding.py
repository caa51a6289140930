"""Adapters decode every failure into Evidence; the shared classifier then names it.

Each row drives the official SDK over real HTTP to the mock, through the guarded stream."""

from __future__ import annotations

import json
import socket
import time

import pytest

from recovery.classify import classify
from recovery.clock import FakeClock
from recovery.guard import CancelToken, open_stream
from recovery.mock.scenario_request import answer_text
from recovery.model_call import ConversationTurn, ModelCall, TextPart, ToolResultPart, ToolUsePart
from recovery.stream_events import TextDelta, ThinkingDelta, ToolCall, TurnEnd, Usage
from recovery.taxonomy import Code, Exposure, Kind, Phase, ProviderFailure, Source

from .conftest import FAKE_ANTHROPIC_KEY, FAKE_OPENAI_KEY, MockProvider, user_call

WIRES = ["anthropic", "openai"]


def drain(mock: MockProvider, wire: str, call: ModelCall, **kwargs):
    stream = open_stream(mock.target(wire), call, cancel=CancelToken(), **kwargs)
    events = []
    try:
        for event in stream:
            events.append(event)  # noqa: PERF402 - keeps what escaped before a failure
    except ProviderFailure as failure:
        return stream, events, failure
    return stream, events, None


@pytest.mark.parametrize("wire", WIRES)
def test_a_plain_answer_streams_text_then_usage_then_the_terminal_event(
    mock_provider: MockProvider, wire: str
) -> None:
    stream, events, failure = drain(mock_provider, wire, user_call("hello there"))
    assert failure is None
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == answer_text("hello there")
    assert sum(isinstance(e, TextDelta) for e in events) > 3
    assert isinstance(events[-1], TurnEnd) and events[-1].stop_reason == "end_turn"
    assert isinstance(events[-2], Usage) and events[-2].output_tokens > 0
    assert (
        stream.exposure is Exposure.CONTENT
        and stream.ttft_ms is not None
        and stream.bytes_received > 500
    )


@pytest.mark.parametrize("wire", WIRES)
def test_thinking_arrives_as_thinking_deltas(mock_provider: MockProvider, wire: str) -> None:
    _, events, failure = drain(mock_provider, wire, user_call("/thinking why"))
    assert failure is None
    kinds = [type(e) for e in events]
    assert kinds.index(ThinkingDelta) < kinds.index(TextDelta)


@pytest.mark.parametrize("wire", WIRES)
def test_a_tool_call_escapes_whole_and_the_next_call_carries_its_result(
    mock_provider: MockProvider, wire: str
) -> None:
    first = user_call('/tool append_note {"text": "buy milk"} please')
    _, events, failure = drain(mock_provider, wire, first)
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert failure is None and len(calls) == 1
    assert (calls[0].name, calls[0].arguments) == ("append_note", {"text": "buy milk"})
    assert events[-1].stop_reason == "tool_use"
    said = "".join(e.text for e in events if isinstance(e, TextDelta))
    follow_up = ModelCall(
        model="mock-1",
        turns=(
            *first.turns,
            ConversationTurn(
                "assistant",
                (TextPart(said), ToolUsePart(calls[0].id, calls[0].name, calls[0].arguments)),
            ),
            ConversationTurn("user", (ToolResultPart(calls[0].id, "note 7 saved"),)),
        ),
    )
    _, events, failure = drain(mock_provider, wire, follow_up)
    assert failure is None and events[-1].stop_reason == "end_turn"
    assert "note 7 saved" in "".join(e.text for e in events if isinstance(e, TextDelta))
    assert [r["tool_results"] for r in mock_provider.requests()] == [0, 1]


# (scenario, wire) -> kind, status, provider_code, exposure, classified code. The kind is what the
# adapter observed itself (a cut, a drop, an unreadable event); an error the provider sent stays
# UNKNOWN, and the catalogue names it from its status, error type and text.
FAILURES = [
    (
        "/overloaded:1",
        "anthropic",
        Kind.UNKNOWN,
        529,
        "overloaded_error",
        Exposure.NONE,
        Code.PROVIDER_OVERLOADED,
    ),
    (
        "/overloaded-sse:1",
        "anthropic",
        Kind.UNKNOWN,
        200,
        "overloaded_error",
        Exposure.NONE,
        Code.PROVIDER_OVERLOADED,
    ),
    (
        "/overloaded-after-start:1",
        "anthropic",
        Kind.UNKNOWN,
        200,
        "overloaded_error",
        Exposure.METADATA,
        Code.PROVIDER_OVERLOADED,
    ),
    (
        "/overloaded-after-text:1",
        "anthropic",
        Kind.UNKNOWN,
        200,
        "overloaded_error",
        Exposure.CONTENT,
        Code.PROVIDER_OVERLOADED,
    ),
    (
        "/rate-limited:1",
        "anthropic",
        Kind.UNKNOWN,
        429,
        "rate_limit_error",
        Exposure.NONE,
        Code.RATE_LIMITED,
    ),
    (
        "/server-error:1:503",
        "anthropic",
        Kind.UNKNOWN,
        503,
        "api_error",
        Exposure.NONE,
        Code.PROVIDER_UNAVAILABLE,
    ),
    (
        "/quota",
        "anthropic",
        Kind.UNKNOWN,
        402,
        "billing_error",
        Exposure.NONE,
        Code.BILLING_LIMITED,
    ),
    (
        "/auth",
        "anthropic",
        Kind.UNKNOWN,
        401,
        "authentication_error",
        Exposure.NONE,
        Code.AUTH_REQUIRED,
    ),
    ("/cut:1", "anthropic", Kind.TRUNCATED, None, None, Exposure.CONTENT, Code.TRUNCATED_STREAM),
    (
        "/cut-before-output:1",
        "anthropic",
        Kind.TRUNCATED,
        None,
        None,
        Exposure.METADATA,
        Code.TRUNCATED_STREAM,
    ),
    (
        "/malformed:1",
        "anthropic",
        Kind.MALFORMED,
        None,
        None,
        Exposure.METADATA,
        Code.MALFORMED_STREAM,
    ),
    ("/drop:1", "anthropic", Kind.NETWORK, None, None, Exposure.CONTENT, Code.NETWORK_UNAVAILABLE),
    (
        "/drop-before-output:1",
        "anthropic",
        Kind.NETWORK,
        None,
        None,
        Exposure.METADATA,
        Code.NETWORK_UNAVAILABLE,
    ),
    (
        "/tool-partial-fail:1",
        "anthropic",
        Kind.UNKNOWN,
        200,
        "overloaded_error",
        Exposure.METADATA,
        Code.PROVIDER_OVERLOADED,
    ),
    (
        "/tool-complete-fail:1",
        "anthropic",
        Kind.UNKNOWN,
        200,
        "overloaded_error",
        Exposure.TOOL_CALL,
        Code.PROVIDER_OVERLOADED,
    ),
    # OpenAI sends an overload as a server_error type whose message is its overload sentence.
    (
        "/overloaded:1",
        "openai",
        Kind.UNKNOWN,
        503,
        "overloaded",
        Exposure.NONE,
        Code.PROVIDER_OVERLOADED,
    ),
    (
        "/overloaded-sse:1",
        "openai",
        Kind.UNKNOWN,
        None,
        "overloaded",
        Exposure.NONE,
        Code.PROVIDER_OVERLOADED,
    ),
    (
        "/overloaded-after-text:1",
        "openai",
        Kind.UNKNOWN,
        None,
        "overloaded",
        Exposure.CONTENT,
        Code.PROVIDER_OVERLOADED,
    ),
    (
        "/rate-limited:1",
        "openai",
        Kind.UNKNOWN,
        429,
        "rate_limit_exceeded",
        Exposure.NONE,
        Code.RATE_LIMITED,
    ),
    (
        "/quota",
        "openai",
        Kind.UNKNOWN,
        429,
        "insufficient_quota",
        Exposure.NONE,
        Code.BILLING_LIMITED,
    ),
    ("/auth", "openai", Kind.UNKNOWN, 401, "invalid_api_key", Exposure.NONE, Code.AUTH_REQUIRED),
    ("/cut:1", "openai", Kind.TRUNCATED, None, None, Exposure.CONTENT, Code.TRUNCATED_STREAM),
    (
        "/malformed:1",
        "openai",
        Kind.MALFORMED,
        None,
        None,
        Exposure.METADATA,
        Code.MALFORMED_STREAM,
    ),
    ("/drop:1", "openai", Kind.NETWORK, None, None, Exposure.CONTENT, Code.NETWORK_UNAVAILABLE),
    (
        "/tool-complete-fail:1",
        "openai",
        Kind.UNKNOWN,
        None,
        "overloaded",
        Exposure.METADATA,
        Code.PROVIDER_OVERLOADED,
    ),
    (
        "/gateway-openrouter:1",
        "openai",
        Kind.UNKNOWN,
        502,
        "overloaded_error",
        Exposure.NONE,
        Code.PROVIDER_OVERLOADED,
    ),
    (
        "/gateway-litellm:1",
        "openai",
        Kind.UNKNOWN,
        429,
        "throttling_error",
        Exposure.NONE,
        Code.RATE_LIMITED,
    ),
]


@pytest.mark.parametrize(
    ("scenario", "wire", "kind", "status", "provider_code", "exposure", "code"), FAILURES
)
def test_each_failure_is_decoded_into_evidence_the_classifier_can_name(
    mock_provider: MockProvider, scenario, wire, kind, status, provider_code, exposure, code
) -> None:
    _, _, failure = drain(mock_provider, wire, user_call(f"{scenario} tell me a joke"))
    assert failure is not None
    evidence = failure.evidence
    assert (evidence.kind, evidence.status, evidence.provider_code, evidence.exposure) == (
        kind,
        status,
        provider_code,
        exposure,
    )
    assert evidence.provider_id == wire and evidence.model_id == "mock-1"
    assert not evidence.terminal_seen
    classification = classify(evidence)
    assert classification.code is code


@pytest.mark.parametrize("wire", WIRES)
def test_an_in_stream_error_is_judged_by_its_body_not_by_the_200(
    mock_provider: MockProvider, wire: str
) -> None:
    _, _, failure = drain(mock_provider, wire, user_call("/overloaded-sse:1 hi"))
    assert failure.evidence.source is Source.SSE and failure.evidence.phase is Phase.STREAM
    assert "overloaded" in json.loads(failure.evidence.excerpt)["error"]["message"].lower()


@pytest.mark.parametrize("wire", WIRES)
def test_retry_after_and_reset_headers_become_milliseconds(
    mock_provider: MockProvider, wire: str
) -> None:
    clock = FakeClock()
    mock_provider.script("/rate-limited:1:7")
    before = int(time.time() * 1000)
    _, _, failure = drain(mock_provider, wire, user_call("hi"), clock=clock)
    assert failure.evidence.retry_after_ms == 7000
    reset = failure.evidence.reset_at_ms
    if wire == "anthropic":  # RFC 3339 absolute time, whole seconds
        assert before + 5000 <= reset <= before + 9000
    else:  # a duration from now, by the injected clock
        assert reset == int(clock.now() * 1000) + 7000


@pytest.mark.parametrize("wire", WIRES)
def test_a_huge_error_body_is_bounded_and_still_names_its_type(
    mock_provider: MockProvider, wire: str
) -> None:
    _, _, failure = drain(mock_provider, wire, user_call("/huge-error:1 hi"))
    excerpt = failure.evidence.excerpt
    assert len(excerpt.encode()) <= 4096
    body = json.loads(excerpt)
    assert body["error"]["type"] in ("api_error", "server_error")
    assert classify(failure.evidence).is_transient


@pytest.mark.parametrize("wire", WIRES)
def test_a_credential_quoted_back_by_a_gateway_never_survives_into_evidence(
    mock_provider: MockProvider, wire: str
) -> None:
    target = mock_provider.target(wire)
    stream = open_stream(target, user_call("/echo-credentials hi"), cancel=CancelToken())
    with pytest.raises(ProviderFailure) as raised:
        list(stream)
    key = FAKE_ANTHROPIC_KEY if wire == "anthropic" else FAKE_OPENAI_KEY
    assert "upstream rejected" in raised.value.evidence.excerpt
    for text in (
        raised.value.evidence.excerpt,
        str(raised.value),
        repr(raised.value.evidence),
        repr(target),
    ):
        assert key not in text


@pytest.mark.parametrize("wire", WIRES)
def test_a_dead_port_is_a_network_failure_at_connect(wire: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound but not listening: connection refused
        dead = MockProvider(f"http://127.0.0.1:{port}")
        _, _, failure = drain(dead, wire, user_call("hi"))
    assert (failure.evidence.kind, failure.evidence.phase) == (Kind.NETWORK, Phase.CONNECT)
    assert classify(failure.evidence).code is Code.NETWORK_UNAVAILABLE
