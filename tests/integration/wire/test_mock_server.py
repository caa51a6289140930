"""The mock provider driven by the official SDKs (retries off) for every scenario, both wires."""

from __future__ import annotations

import anthropic
import httpx2
import openai
import pytest

from recovery.mock.scenario_request import answer_text
from recovery.mock.scenarios import SCENARIOS

from .conftest import FAKE_ANTHROPIC_KEY, FAKE_OPENAI_KEY, MockProvider


def anthropic_client(mock: MockProvider, **kwargs) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key=FAKE_ANTHROPIC_KEY, base_url=mock.url, max_retries=0, **kwargs
    )


def openai_client(mock: MockProvider) -> openai.OpenAI:
    return openai.OpenAI(api_key=FAKE_OPENAI_KEY, base_url=f"{mock.url}/v1", max_retries=0)


def run_anthropic(mock: MockProvider, text: str) -> tuple[list[str], str, Exception | None]:
    kinds, chunks = [], []
    try:
        with anthropic_client(mock).messages.create(
            model="mock-1", max_tokens=64, messages=[{"role": "user", "content": text}], stream=True
        ) as stream:
            for event in stream:
                kinds.append(event.type)
                if event.type == "content_block_delta" and event.delta.type == "text_delta":
                    chunks.append(event.delta.text)
    except (anthropic.APIError, httpx2.HTTPError, ValueError) as error:
        return kinds, "".join(chunks), error
    return kinds, "".join(chunks), None


def run_openai(mock: MockProvider, text: str) -> tuple[list[str], str, Exception | None]:
    finishes, chunks = [], []
    try:
        stream = openai_client(mock).chat.completions.create(
            model="mock-1",
            messages=[{"role": "user", "content": text}],
            stream=True,
            stream_options={"include_usage": True},
        )
        for chunk in stream:
            for choice in chunk.choices:
                if choice.delta.content:
                    chunks.append(choice.delta.content)
                if choice.finish_reason:
                    finishes.append(choice.finish_reason)
            if chunk.usage is not None:
                finishes.append("usage")
    except (openai.APIError, httpx2.HTTPError, ValueError) as error:
        return finishes, "".join(chunks), error
    return finishes, "".join(chunks), None


def test_every_scenario_has_a_characterization_below() -> None:
    answering = {"plain", "thinking", "tool", "long", "tool-then-overloaded", "bulk"}
    answering |= {"echo-credentials-stream"}  # tests/integration/core/test_output_redaction.py
    answering |= {"unstorable"}  # tests/integration/core/test_unstorable_output.py
    answering |= {"edit", "run", "edit-then-overloaded"}  # test_mock_tool_asks.py
    # wire-fixture sends recorded bodies: tests/integration/wire/test_stream_fixtures.py
    covered = {name for name, *_ in ANTHROPIC_FIRST_ATTEMPT} | answering | {"wire-fixture"}
    assert (
        set(SCENARIOS) - {"slow-first-byte", "slow-stream", "ping-stall", "stall-after-text"}
        <= covered
    )


# scenario command -> (SDK exception class name or None, HTTP status or None, text cut short?)
ANTHROPIC_FIRST_ATTEMPT = [
    ("overloaded", "OverloadedError", 529, False),
    ("overloaded-sse", "APIStatusError", 200, False),
    ("overloaded-after-start", "APIStatusError", 200, False),
    ("overloaded-after-text", "APIStatusError", 200, True),
    ("rate-limited", "RateLimitError", 429, False),
    ("rate-limited-after-text", "APIStatusError", 200, True),
    ("server-error", "InternalServerError", 500, False),
    ("server-error-after-text", "APIStatusError", 200, True),
    ("drop", "RemoteProtocolError", None, True),
    ("drop-before-output", "RemoteProtocolError", None, False),
    ("cut", None, None, True),
    ("cut-before-output", None, None, False),
    ("malformed", "JSONDecodeError", None, False),
    ("huge-error", "InternalServerError", 500, False),
    ("quota", "PaymentRequiredError", 402, False),
    ("auth", "AuthenticationError", 401, False),
    ("echo-credentials", "BadRequestError", 400, False),
    ("gateway-openrouter", "InternalServerError", 502, False),
    ("gateway-litellm", "RateLimitError", 429, False),
    ("tool-partial-fail", "APIStatusError", 200, False),
    ("tool-complete-fail", "APIStatusError", 200, False),
]


@pytest.mark.parametrize(("scenario", "error_name", "status", "cut_short"), ANTHROPIC_FIRST_ATTEMPT)
def test_the_anthropic_sdk_sees_each_failure_as_the_real_api_would_send_it(
    mock_provider: MockProvider,
    scenario: str,
    error_name: str | None,
    status: int | None,
    cut_short: bool,
) -> None:
    kinds, text, error = run_anthropic(mock_provider, f"/{scenario} tell me a joke")
    if error_name is None:
        assert error is None and "message_stop" not in kinds  # ends silently: looks like success
    else:
        assert type(error).__name__ == error_name
        assert getattr(error, "status_code", None) == status
    assert bool(text) is cut_short
    if cut_short:
        assert answer_text("tell me a joke").startswith(text) and text != answer_text(
            "tell me a joke"
        )


@pytest.mark.parametrize("scenario", [name for name, error, *_ in ANTHROPIC_FIRST_ATTEMPT if error])
def test_a_failing_scenario_answers_once_its_count_is_spent(
    mock_provider: MockProvider, scenario: str
) -> None:
    if scenario in ("quota", "auth", "echo-credentials"):  # permanent by design: never recover
        _, _, error = run_anthropic(mock_provider, f"/{scenario}")
        _, _, again = run_anthropic(mock_provider, f"/{scenario}")
        assert error is not None and again is not None
        return
    run_anthropic(mock_provider, f"/{scenario}:1 tell me a joke")
    kinds, text, error = run_anthropic(mock_provider, f"/{scenario}:1 tell me a joke")
    assert error is None and kinds[-1] == "message_stop"
    if scenario.startswith("tool"):
        assert "content_block_stop" in kinds
    else:
        assert text == answer_text("tell me a joke")
    assert [r["attempt"] for r in mock_provider.requests()] == [1, 2]


OPENAI_FIRST_ATTEMPT = [
    ("overloaded", "InternalServerError", 503, False),
    ("overloaded-sse", "APIError", None, False),
    ("overloaded-after-text", "APIError", None, True),
    ("rate-limited", "RateLimitError", 429, False),
    ("server-error:1:502", "InternalServerError", 502, False),
    ("drop", "APIConnectionError", None, True),
    ("cut", None, None, True),
    ("malformed", "JSONDecodeError", None, False),
    ("quota", "RateLimitError", 429, False),
    ("auth", "AuthenticationError", 401, False),
    ("gateway-openrouter", "InternalServerError", 502, False),
    ("tool-complete-fail", "APIError", None, False),
]


@pytest.mark.parametrize(("scenario", "error_name", "status", "cut_short"), OPENAI_FIRST_ATTEMPT)
def test_the_openai_sdk_sees_each_failure_as_the_real_api_would_send_it(
    mock_provider: MockProvider,
    scenario: str,
    error_name: str | None,
    status: int | None,
    cut_short: bool,
) -> None:
    finishes, text, error = run_openai(mock_provider, f"/{scenario} tell me a joke")
    if error_name is None:
        assert error is None and finishes == []  # no finish_reason, no usage: silently cut
    else:
        assert type(error).__name__ == error_name
        assert getattr(error, "status_code", None) == status
    assert bool(text) is cut_short


def test_the_openai_stream_ends_with_finish_reason_then_usage(mock_provider: MockProvider) -> None:
    finishes, text, error = run_openai(mock_provider, "hello there")
    assert error is None
    assert finishes == ["stop", "usage"]
    assert text == answer_text("hello there")


def test_openai_tool_arguments_arrive_split_and_assemble(mock_provider: MockProvider) -> None:
    stream = openai_client(mock_provider).chat.completions.create(
        model="mock-1",
        messages=[{"role": "user", "content": '/tool append_note {"text": "buy milk"} now'}],
        stream=True,
    )
    pieces, finish = [], None
    for chunk in stream:
        for choice in chunk.choices:
            for call in choice.delta.tool_calls or ():
                pieces.append(call.function.arguments or "")
            finish = choice.finish_reason or finish
    assert len([p for p in pieces if p]) >= 2
    assert "".join(pieces) == '{"text": "buy milk"}'
    assert finish == "tool_calls"


def test_the_anthropic_tool_loop_ends_with_an_answer_after_the_result(
    mock_provider: MockProvider,
) -> None:
    client = anthropic_client(mock_provider)
    first = [{"role": "user", "content": '/tool read_clock {"zone": "UTC"} what time is it'}]
    message = client.messages.create(model="mock-1", max_tokens=64, messages=first)
    call = next(block for block in message.content if block.type == "tool_use")
    assert (call.name, call.input, message.stop_reason) == (
        "read_clock",
        {"zone": "UTC"},
        "tool_use",
    )
    history = [
        *first,
        {"role": "assistant", "content": [block.model_dump() for block in message.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "12:00"}],
        },
    ]
    answer = client.messages.create(model="mock-1", max_tokens=64, messages=history)
    assert answer.stop_reason == "end_turn"
    assert "12:00" in answer.content[0].text


def test_thinking_streams_thinking_deltas_before_the_text(mock_provider: MockProvider) -> None:
    with anthropic_client(mock_provider).messages.create(
        model="mock-1",
        max_tokens=64,
        messages=[{"role": "user", "content": "/thinking why"}],
        stream=True,
    ) as stream:
        deltas = [e.delta.type for e in stream if e.type == "content_block_delta"]
    assert (
        deltas.index("thinking_delta")
        < deltas.index("signature_delta")
        < deltas.index("text_delta")
    )


def test_long_streams_the_requested_number_of_deltas(mock_provider: MockProvider) -> None:
    _, text, error = run_anthropic(mock_provider, "/long:300")
    assert error is None and len(text.split()) == 300


def test_long_puts_as_many_words_in_a_delta_as_asked(mock_provider: MockProvider) -> None:
    kinds, text, error = run_anthropic(mock_provider, "/long:1000:300")
    assert error is None
    assert text == "".join(f"w{i} " for i in range(1000))
    assert kinds.count("content_block_delta") == 4  # 300, 300, 300 and 100 words


def test_bulk_streams_the_requested_characters_in_chunks_of_the_requested_size(
    mock_provider: MockProvider,
) -> None:
    _, text, error = run_anthropic(mock_provider, "[[mock:bulk:2500:1000]] go")
    assert error is None and len(text) == 2500 and text.startswith("lorem ipsum")


def test_a_request_without_credentials_is_refused_like_the_real_api(
    mock_provider: MockProvider,
) -> None:
    response = httpx2.post(
        f"{mock_provider.url}/v1/messages", json={"model": "m", "max_tokens": 1, "messages": []}
    )
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"


def test_the_request_log_counts_attempts_per_conversation_and_never_stores_the_key(
    mock_provider: MockProvider,
) -> None:
    run_anthropic(mock_provider, "/overloaded:2 same conversation")
    run_anthropic(mock_provider, "/overloaded:2 same conversation")
    run_anthropic(mock_provider, "/overloaded:2 another conversation")
    seen = mock_provider.requests()
    assert [r["attempt"] for r in seen] == [1, 2, 1]
    assert seen[0]["conversation"] == seen[1]["conversation"] != seen[2]["conversation"]
    assert FAKE_ANTHROPIC_KEY not in str(seen)


def test_a_script_forces_a_scenario_for_one_model(mock_provider: MockProvider) -> None:
    mock_provider.script("/overloaded:9", model="mock-1")
    _, _, error = run_anthropic(mock_provider, "an ordinary prompt")
    assert isinstance(error, anthropic.APIStatusError) and error.status_code == 529


def test_non_streaming_requests_get_whole_bodies_and_http_errors(
    mock_provider: MockProvider,
) -> None:
    client = anthropic_client(mock_provider)
    message = client.messages.create(
        model="mock-1", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    )
    assert message.content[0].text == answer_text("hi")
    with pytest.raises(anthropic.APIStatusError) as raised:
        client.messages.create(
            model="mock-1",
            max_tokens=64,
            messages=[{"role": "user", "content": "/overloaded-sse:1 hi"}],
        )
    assert raised.value.status_code == 529
    completion = openai_client(mock_provider).chat.completions.create(
        model="mock-1", messages=[{"role": "user", "content": "hi"}]
    )
    assert completion.choices[0].message.content == answer_text("hi")


def test_health_and_reset_endpoints_answer(mock_provider: MockProvider) -> None:
    assert httpx2.get(f"{mock_provider.url}/_mock/health").json() == {"ok": True}
    run_anthropic(mock_provider, "hello")
    mock_provider.reset()
    assert mock_provider.count() == 0
