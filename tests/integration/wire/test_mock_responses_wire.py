"""The OpenAI Responses wire (what Codex speaks), through the official `openai` SDK over HTTP."""

from __future__ import annotations

import openai
import pytest

from recovery.mock.scenario_request import answer_text
from recovery.mock.testing import MockProvider

from .mock_clients import openai_client


def events_of(mock: MockProvider, prompt, **options) -> list:
    stream = openai_client(mock).responses.create(
        model="gpt-5.4", input=prompt, stream=True, **options
    )
    return list(stream)


def test_a_streamed_answer_has_the_real_event_sequence(mock_provider: MockProvider) -> None:
    events = events_of(mock_provider, "hello there")

    kinds = [e.type for e in events]
    deltas = kinds.count("response.output_text.delta")
    assert kinds == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * deltas,
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert deltas > 3
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == answer_text("hello there") == events[-1].response.output_text
    completed = events[-1].response
    assert completed.status == "completed" and completed.usage.output_tokens == deltas
    assert completed.usage.total_tokens == completed.usage.input_tokens + deltas


def test_every_delta_names_the_item_and_part_it_belongs_to(mock_provider: MockProvider) -> None:
    events = events_of(mock_provider, "hello there")

    added = next(e for e in events if e.type == "response.output_item.added")
    deltas = [e for e in events if e.type == "response.output_text.delta"]
    assert added.item.type == "message" and added.item.status == "in_progress"
    assert {(d.item_id, d.output_index, d.content_index) for d in deltas} == {(added.item.id, 0, 0)}


def test_a_function_call_streams_its_arguments_and_the_loop_ends_with_an_answer(
    mock_provider: MockProvider,
) -> None:
    prompt = '[[mock:tool]] read_clock {"zone": "UTC"} what time is it'
    events = events_of(mock_provider, prompt)

    call = next(
        e.item
        for e in events
        if e.type == "response.output_item.done" and e.item.type == "function_call"
    )
    pieces = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    done = next(e for e in events if e.type == "response.function_call_arguments.done")
    assert (call.name, call.arguments, call.status) == (
        "read_clock",
        '{"zone": "UTC"}',
        "completed",
    )
    assert len(pieces) >= 2 and "".join(pieces) == done.arguments == call.arguments
    assert call.call_id.startswith("call_")

    history = [
        {"role": "user", "content": prompt},
        {"type": "function_call", "call_id": call.call_id, "name": call.name,
         "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "12:00"},
    ]  # fmt: skip
    answer = openai_client(mock_provider).responses.create(model="gpt-5.4", input=history)
    assert answer.status == "completed"
    assert "The tool returned: 12:00" in answer.output_text
    assert [r["tool_results"] for r in mock_provider.requests()] == [0, 1]


def test_thinking_streams_a_reasoning_summary_before_the_text(mock_provider: MockProvider) -> None:
    kinds = [e.type for e in events_of(mock_provider, "[[mock:thinking]] why")]

    assert (
        kinds.index("response.reasoning_summary_part.added")
        < kinds.index("response.reasoning_summary_text.delta")
        < kinds.index("response.output_text.delta")
    )


def test_a_failure_in_the_stream_is_an_error_event_then_response_failed(
    mock_provider: MockProvider,
) -> None:
    events = events_of(mock_provider, "[[mock:overloaded-after-text]] tell me a joke")

    *before, error, failed = events
    assert "response.output_text.delta" in [e.type for e in before]
    assert (error.type, error.code) == ("error", "server_is_overloaded")
    assert error.message == "Selected model is at capacity. Please try a different model."
    assert failed.type == "response.failed" and failed.response.status == "failed"
    assert (failed.response.error.code, failed.response.error.message) == (
        error.code,
        error.message,
    )


def test_a_rate_limit_in_the_stream_says_when_to_try_again(mock_provider: MockProvider) -> None:
    *_, failed = events_of(mock_provider, "[[mock:rate-limited-after-text:1:7]] hi")

    assert failed.response.error.code == "rate_limit_exceeded"
    assert "Please try again in 7s." in failed.response.error.message  # what Codex reads


def test_an_http_rate_limit_carries_retry_after(mock_provider: MockProvider) -> None:
    with pytest.raises(openai.RateLimitError) as raised:
        events_of(mock_provider, "[[mock:rate-limited:1:7]] hi")

    assert raised.value.response.headers["retry-after"] == "7"
    assert raised.value.code == "rate_limit_exceeded"
    assert "try again in 7s" in raised.value.message


def test_the_marker_is_read_from_the_last_part_of_a_codex_shaped_input(
    mock_provider: MockProvider,
) -> None:
    codex_input = [
        {"type": "message", "role": "developer", "content": [
            {"type": "input_text",
             "text": "<permissions instructions>...</permissions instructions>"}
        ]},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>cwd</environment_context>"},
        ]},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "[[mock:overloaded:1]] hi"},
        ]},
    ]  # fmt: skip
    client = openai_client(mock_provider)

    with pytest.raises(openai.InternalServerError):
        client.responses.create(model="gpt-5.4", instructions="You are Codex.", input=codex_input)
    answer = client.responses.create(
        model="gpt-5.4", instructions="You are Codex.", input=codex_input
    )

    assert answer.output_text == answer_text("hi")
    first, second = mock_provider.requests()
    assert first["roles"] == ["developer", "user", "user"]
    assert (first["attempt"], second["attempt"]) == (1, 2)


def test_a_cut_stream_never_says_completed(mock_provider: MockProvider) -> None:
    kinds = [e.type for e in events_of(mock_provider, "[[mock:cut]] hi")]

    assert "response.output_text.delta" in kinds
    assert "response.completed" not in kinds and "response.output_item.done" not in kinds
