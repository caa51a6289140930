"""Stream decoding cases no scenario renders, each from a wire fixture (recovery/mock/wire_fixtures)
served by the mock provider and read by the official SDK client through the guarded stream."""

from __future__ import annotations

import pytest

from recovery.classify import classify
from recovery.guard import CancelToken, open_stream
from recovery.stream_events import TextDelta, ToolCall, TurnEnd, Usage
from recovery.taxonomy import Code, Exposure, Kind, ProviderFailure, Source

from .conftest import MockProvider, user_call


def drain(mock: MockProvider, wire: str, fixture: str):
    stream = open_stream(
        mock.target(wire), user_call(f"/wire-fixture:{fixture} hi"), cancel=CancelToken()
    )
    events = []
    try:
        for event in stream:
            events.append(event)  # noqa: PERF402 - keeps what escaped before a failure
    except ProviderFailure as failure:
        return events, failure
    return events, None


def text_of(events) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def test_finish_reason_error_is_a_failure_not_a_finished_turn(mock_provider: MockProvider):
    events, failure = drain(mock_provider, "openai", "openai-finish-error")

    assert failure is not None and not any(isinstance(e, TurnEnd) for e in events)
    assert failure.evidence.kind is Kind.TRUNCATED
    assert failure.evidence.exposure is Exposure.METADATA  # nothing shown: safe to retry
    assert classify(failure.evidence).code is Code.TRUNCATED_STREAM


def test_finish_reason_error_after_text_is_judged_by_its_error_object(mock_provider):
    events, failure = drain(mock_provider, "openai", "openai-finish-error-after-text")

    assert text_of(events) == "The answer"
    assert failure is not None and failure.evidence.exposure is Exposure.CONTENT
    assert "Provider returned error" in failure.evidence.excerpt


@pytest.mark.parametrize(
    ("wire", "fixture", "text"),
    [
        ("openai", "openai-keepalive", "Still here."),
        ("anthropic", "anthropic-keepalive", "Still here."),
    ],
)
def test_a_keepalive_event_without_data_is_ignored(mock_provider, wire, fixture, text):
    events, failure = drain(mock_provider, wire, fixture)

    assert failure is None
    assert text_of(events) == text
    assert isinstance(events[-1], TurnEnd) and events[-1].stop_reason == "end_turn"


def test_text_carried_in_content_block_start_is_kept(mock_provider: MockProvider):
    events, failure = drain(mock_provider, "anthropic", "anthropic-text-in-block-start")

    assert failure is None
    assert text_of(events) == "Hello, world."
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("toolu_fx5", "read_clock", {"zone": "UTC"})
    ]
    assert events[-1].stop_reason == "tool_use"


@pytest.mark.parametrize("wire", ["anthropic", "openai"])
def test_a_200_json_error_body_is_decoded_as_the_error_it_is(mock_provider, wire):
    events, failure = drain(mock_provider, wire, "json-200-error")

    assert events == [] and failure is not None
    assert (failure.evidence.source, failure.evidence.status) == (Source.HTTP, 200)
    assert classify(failure.evidence).code is Code.PROVIDER_OVERLOADED


@pytest.mark.parametrize("wire", ["anthropic", "openai"])
def test_a_200_json_body_that_is_not_a_stream_is_a_clear_failure(mock_provider, wire):
    events, failure = drain(mock_provider, wire, "json-200-completion")

    assert events == [] and failure is not None
    assert failure.evidence.kind is Kind.MALFORMED
    assert "expected an event stream, got a JSON body (application/json" in failure.detail
    assert classify(failure.evidence).code is Code.MALFORMED_STREAM


def test_an_unknown_fixture_is_refused_naming_the_known_ones(mock_provider: MockProvider):
    _, failure = drain(mock_provider, "anthropic", "no-such-fixture")

    assert failure is not None and failure.evidence.status == 400
    assert "anthropic-keepalive" in failure.evidence.excerpt


def test_usage_still_arrives_around_keepalives(mock_provider: MockProvider):
    events, _ = drain(mock_provider, "openai", "openai-keepalive")
    assert any(isinstance(e, Usage) and e.output_tokens == 2 for e in events)
