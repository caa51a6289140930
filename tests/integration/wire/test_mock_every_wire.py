"""Every scenario on every wire (Anthropic, OpenAI Chat, OpenAI Responses, Gemini), driven by each
provider's official SDK over real HTTP, each failure seen as that SDK sees the real provider's."""

from __future__ import annotations

import pytest

from recovery.mock.scenario_request import answer_text
from recovery.mock.scenarios import SCENARIOS
from recovery.mock.testing import MockProvider
from recovery.mock.wires import ANTHROPIC, GEMINI, OPENAI_CHAT, OPENAI_RESPONSES

from .mock_clients import WIRES, Run, raw_body, raw_post, run, status_of

PROMPT = "tell me a joke"
ANSWER = answer_text(PROMPT)

# What the SDK shows on the first streamed attempt, per wire (anthropic, chat, responses, gemini):
# "ErrorClass STATUS" (an exception), "response.failed CODE" (Responses fails in-band, no
# exception), or "silent" (the stream just ends: no exception, no end-of-answer signal).
IN_STREAM_OVERLOAD = (
    "APIStatusError 200",
    "APIError",
    "response.failed server_is_overloaded",
    "ServerError 503",
)
DROPPED = ("RemoteProtocolError", "APIConnectionError", "APIConnectionError", "RemoteProtocolError")
SILENT = ("silent",) * 4
FIRST_STREAMED_ATTEMPT: dict[str, tuple[str, str, str, str]] = {
    "overloaded": (
        "OverloadedError 529",
        "InternalServerError 503",
        "InternalServerError 503",
        "ServerError 503",
    ),
    "overloaded-sse": IN_STREAM_OVERLOAD,
    "overloaded-after-start": IN_STREAM_OVERLOAD,
    "overloaded-after-text": IN_STREAM_OVERLOAD,
    "rate-limited": ("RateLimitError 429",) * 3 + ("ClientError 429",),
    "rate-limited-after-text": (
        "APIStatusError 200",
        "APIError",
        "response.failed rate_limit_exceeded",
        "ClientError 429",
    ),
    "server-error": ("InternalServerError 500",) * 3 + ("ServerError 500",),
    "server-error-after-text": (
        "APIStatusError 200",
        "APIError",
        "response.failed server_error",
        "ServerError 500",
    ),
    "drop": DROPPED,
    "drop-before-output": DROPPED,
    "cut": SILENT,
    "cut-before-output": SILENT,
    "malformed": ("JSONDecodeError",) * 3 + ("UnknownApiResponseError",),
    "huge-error": ("InternalServerError 500",) * 3 + ("ServerError 500",),
    "quota": (
        "PaymentRequiredError 402",
        "RateLimitError 429",
        "RateLimitError 429",
        "ClientError 429",
    ),
    "auth": ("AuthenticationError 401",) * 3 + ("ClientError 400",),
    "echo-credentials": ("BadRequestError 400",) * 3 + ("ClientError 400",),
    "gateway-openrouter": ("InternalServerError 502",) * 3 + ("ServerError 502",),
    "gateway-litellm": ("RateLimitError 429",) * 3 + ("ClientError 429",),
    "tool-partial-fail": IN_STREAM_OVERLOAD,
    "tool-complete-fail": IN_STREAM_OVERLOAD,
}
PARTIAL_TEXT = {"overloaded-after-text", "rate-limited-after-text", "server-error-after-text"}
PARTIAL_TEXT |= {"drop", "cut"}
PERMANENT = {"quota", "auth", "echo-credentials"}
ANSWERING = {"plain", "thinking", "tool", "tool-then-overloaded", "long", "bulk"}
ANSWERING |= {"echo-credentials-stream"}
ANSWERING |= {"unstorable"}  # tests/integration/core/test_unstorable_output.py
ANSWERING |= {"edit", "run", "edit-then-overloaded"}  # test_mock_tool_asks.py
TIMED = {"slow-first-byte", "slow-stream", "ping-stall", "stall-after-text"}
RECOVERING = sorted(set(FIRST_STREAMED_ATTEMPT) - PERMANENT)


def expect_seen(seen: Run, expected: str) -> None:
    name, *rest = expected.split()
    if name == "silent":
        assert seen.error is None and not seen.finished
    elif name == "response.failed":
        assert seen.error is None and not seen.finished
        assert seen.kinds[-2:] == ["error", "response.failed"]
        assert seen.failed_code == rest[0]
    else:
        assert type(seen.error).__name__ == name, seen.error
        assert status_of(seen.error) == (int(rest[0]) if rest else None)


def test_every_scenario_is_characterized_on_every_wire() -> None:
    # wire-fixture sends a recorded body per wire: tests/integration/wire/test_stream_fixtures.py
    assert set(SCENARIOS) == set(FIRST_STREAMED_ATTEMPT) | ANSWERING | TIMED | {"wire-fixture"}


@pytest.mark.parametrize("scenario", sorted(FIRST_STREAMED_ATTEMPT))
@pytest.mark.parametrize("wire", WIRES)
def test_each_failure_reaches_the_sdk_as_that_provider_sends_it(
    mock_provider: MockProvider, wire: str, scenario: str
) -> None:
    seen = run(wire, mock_provider, f"[[mock:{scenario}]] {PROMPT}")

    expect_seen(seen, FIRST_STREAMED_ATTEMPT[scenario][WIRES.index(wire)])
    assert bool(seen.text) is (scenario in PARTIAL_TEXT)
    if seen.text:  # the partial answer is the start of the real one, never all of it
        assert ANSWER.startswith(seen.text) and seen.text != ANSWER


@pytest.mark.parametrize("scenario", RECOVERING)
@pytest.mark.parametrize("wire", WIRES)
def test_a_failing_scenario_answers_on_the_next_attempt_and_then_starts_over(
    mock_provider: MockProvider, wire: str, scenario: str
) -> None:
    prompt = f"[[mock:{scenario}:1]] {PROMPT}"
    first = run(wire, mock_provider, prompt)
    second = run(wire, mock_provider, prompt)
    third = run(wire, mock_provider, prompt)

    assert not first.finished
    assert second.error is None and second.finished
    if not scenario.startswith("tool"):
        assert second.text == ANSWER
    assert not third.finished  # the script played in full, so it plays again
    seen = mock_provider.requests(wire=wire)
    assert [r["attempt"] for r in seen] == [1, 2, 1]
    assert len({r["conversation"] for r in seen}) == 1


@pytest.mark.parametrize("scenario", sorted(PERMANENT))
@pytest.mark.parametrize("wire", WIRES)
def test_a_permanent_failure_never_recovers(
    mock_provider: MockProvider, wire: str, scenario: str
) -> None:
    attempts = [run(wire, mock_provider, f"[[mock:{scenario}]] hi") for _ in range(3)]

    assert all(status_of(a.error) == status_of(attempts[0].error) for a in attempts)
    assert all(a.error is not None and not a.text for a in attempts)


# The failures that arrive inside a 200 stream when streamed come as HTTP errors when not.
NOT_STREAMED_STATUS = {
    "overloaded-sse": (529, 503, 503, 503),
    "rate-limited-after-text": (429, 429, 429, 429),
    "server-error-after-text": (500, 500, 500, 500),
    "tool-complete-fail": (529, 503, 503, 503),
}


@pytest.mark.parametrize("scenario", sorted(NOT_STREAMED_STATUS))
@pytest.mark.parametrize("wire", WIRES)
def test_a_failure_inside_a_stream_is_an_http_error_when_not_streamed(
    mock_provider: MockProvider, wire: str, scenario: str
) -> None:
    seen = run(wire, mock_provider, f"[[mock:{scenario}]] hi", stream=False)

    assert status_of(seen.error) == NOT_STREAMED_STATUS[scenario][WIRES.index(wire)]
    assert seen.text == ""


@pytest.mark.parametrize("scenario", ["drop", "cut", "malformed"])
@pytest.mark.parametrize("wire", WIRES)
def test_a_broken_body_is_an_sdk_error_when_not_streamed(
    mock_provider: MockProvider, wire: str, scenario: str
) -> None:
    seen = run(wire, mock_provider, f"[[mock:{scenario}]] hi", stream=False)

    assert seen.error is not None and status_of(seen.error) is None


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("wire", WIRES)
def test_a_plain_prompt_gets_the_whole_answer(
    mock_provider: MockProvider, wire: str, stream: bool
) -> None:
    seen = run(wire, mock_provider, PROMPT, stream=stream)

    assert seen.error is None and seen.finished
    assert seen.text == ANSWER
    if stream:
        assert len(seen.chunks) > 3  # it arrives in pieces
    (logged,) = mock_provider.requests()
    assert (logged["wire"], logged["stream"], logged["scenario"]) == (wire, stream, "plain")


@pytest.mark.parametrize("wire", WIRES)
def test_a_long_answer_streams_every_word(mock_provider: MockProvider, wire: str) -> None:
    seen = run(wire, mock_provider, "[[mock:long:300]]")

    assert seen.finished and seen.text.split() == [f"w{i}" for i in range(300)]


@pytest.mark.parametrize("wire", WIRES)
def test_a_bulk_answer_streams_every_character(mock_provider: MockProvider, wire: str) -> None:
    seen = run(wire, mock_provider, "[[mock:bulk:3000:700]]")

    assert seen.finished and len(seen.text) == 3000


@pytest.mark.parametrize("wire", WIRES)
def test_a_slow_stream_spaces_its_pieces(mock_provider: MockProvider, wire: str) -> None:
    seen = run(wire, mock_provider, f"[[mock:slow-stream:40]] {PROMPT}")

    # The server pauses 40 ms before each piece, so the last cannot arrive sooner than that
    # many pauses; a busy client may read two pieces close together, but not most of them.
    gaps = sorted(b - a for a, b in zip(seen.arrivals, seen.arrivals[1:], strict=False))
    assert seen.finished and seen.text == ANSWER
    assert seen.arrivals[-1] >= 0.04 * len(seen.chunks)
    assert gaps[len(gaps) // 2] >= 0.02


@pytest.mark.parametrize("wire", WIRES)
def test_a_slow_first_byte_holds_the_first_piece_back(
    mock_provider: MockProvider, wire: str
) -> None:
    prompt = f"[[mock:slow-first-byte:250:1]] {PROMPT}"
    slow = run(wire, mock_provider, prompt)
    again = run(wire, mock_provider, prompt)

    assert slow.finished and slow.arrivals[0] >= 0.25
    assert again.finished and again.text == ANSWER
    first, second = mock_provider.requests()
    assert (first["attempt"], first["script_played"]) == (1, False)
    assert (second["attempt"], second["script_played"]) == (2, True)


@pytest.mark.parametrize("scenario", ["ping-stall:250", "stall-after-text:250"])
@pytest.mark.parametrize("wire", WIRES)
def test_a_stall_holds_the_answer_and_then_finishes_it(
    mock_provider: MockProvider, wire: str, scenario: str
) -> None:
    seen = run(wire, mock_provider, f"[[mock:{scenario}]] {PROMPT}")

    assert seen.error is None and seen.finished
    if scenario.startswith("ping-stall"):
        assert seen.text == ANSWER and seen.arrivals[0] >= 0.25
    else:  # two pieces of "thinking it over", then the stall, then the answer
        assert seen.text == "Thinking it over... " + ANSWER
        assert seen.arrivals[2] >= 0.25  # sent only after the stall
        assert seen.arrivals[2] - seen.arrivals[1] >= 0.1  # the text came before it


# What keeps a stalled stream's connection busy, as each provider really does it.
KEEPALIVE = {
    ANTHROPIC: b"event: ping",
    OPENAI_CHAT: b": ping",
    OPENAI_RESPONSES: b": ping",
    GEMINI: None,  # Gemini sends no keepalive: a stall is silence
}


@pytest.mark.parametrize("wire", WIRES)
def test_a_ping_stall_keeps_the_connection_busy_only_where_the_provider_does(
    mock_provider: MockProvider, wire: str
) -> None:
    response = raw_post(mock_provider, wire, json=raw_body(wire, "[[mock:ping-stall:200]] hi"))

    keepalive = KEEPALIVE[wire]
    assert response.status_code == 200
    if keepalive is None:
        assert b"\n:" not in response.content and not response.content.startswith(b":")
    else:
        assert response.content.count(keepalive) >= 3
