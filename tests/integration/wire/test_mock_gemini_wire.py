"""The Gemini API wire (what Gemini CLI speaks), through the official `google-genai` SDK and, where
the SDK would hide the bytes, raw HTTP."""

from __future__ import annotations

import json

import pytest

from recovery.mock.scenario_request import answer_text
from recovery.mock.testing import MockProvider
from recovery.mock.wires import GEMINI

from .mock_clients import GEMINI_MODEL, gemini_client, genai_errors, genai_types, raw_body, raw_post


def sse_payloads(body: bytes) -> list[dict]:
    assert body.endswith(b"\r\n\r\n")  # Google frames each event with a CRLF blank line
    return [json.loads(event.removeprefix(b"data: ")) for event in body.split(b"\r\n\r\n") if event]


def stream(mock: MockProvider, contents, **config) -> list:
    return list(
        gemini_client(mock).models.generate_content_stream(
            model=GEMINI_MODEL,
            contents=contents,
            config=genai_types.GenerateContentConfig(**config) if config else None,
        )
    )


def test_each_chunk_is_a_whole_generate_content_response(mock_provider: MockProvider) -> None:
    response = raw_post(mock_provider, GEMINI, json=raw_body(GEMINI, "hello there"))

    *chunks, last = sse_payloads(response.content)
    assert response.headers["content-type"].startswith("text/event-stream")
    for chunk in chunks:
        (candidate,) = chunk["candidates"]
        assert candidate["content"]["role"] == "model" and "finishReason" not in candidate
        assert chunk["modelVersion"] == GEMINI_MODEL and chunk["responseId"]
    text = "".join(c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks)
    assert text == answer_text("hello there")
    assert last["candidates"][0]["finishReason"] == "STOP"
    usage = last["usageMetadata"]
    assert usage["candidatesTokenCount"] == len(chunks)
    assert usage["totalTokenCount"] == usage["promptTokenCount"] + len(chunks)


def test_the_sdk_reads_the_stream_and_the_whole_answer(mock_provider: MockProvider) -> None:
    chunks = stream(mock_provider, "hello there")
    whole = gemini_client(mock_provider).models.generate_content(
        model=GEMINI_MODEL, contents="hello there"
    )

    assert "".join(c.text or "" for c in chunks) == answer_text("hello there") == whole.text
    assert chunks[-1].candidates[0].finish_reason == genai_types.FinishReason.STOP
    assert whole.usage_metadata.total_token_count > whole.usage_metadata.prompt_token_count


def test_a_function_call_arrives_whole_and_the_loop_ends_with_an_answer(
    mock_provider: MockProvider,
) -> None:
    prompt = '[[mock:tool]] read_clock {"zone": "UTC"} what time is it'
    chunks = stream(mock_provider, prompt)

    calls = [
        p.function_call
        for c in chunks
        for p in c.candidates[0].content.parts or ()
        if p.function_call
    ]
    assert [(call.name, call.args) for call in calls] == [("read_clock", {"zone": "UTC"})]
    history = [
        genai_types.Content(role="user", parts=[genai_types.Part(text=prompt)]),
        genai_types.Content(role="model", parts=[genai_types.Part(function_call=calls[0])]),
        genai_types.Content(role="user", parts=[
            genai_types.Part.from_function_response(name="read_clock", response={"output": "12:00"})
        ]),
    ]  # fmt: skip
    answer = gemini_client(mock_provider).models.generate_content(
        model=GEMINI_MODEL, contents=history
    )
    assert "The tool returned: 12:00" in answer.text
    assert [r["tool_results"] for r in mock_provider.requests()] == [0, 1]


def test_thinking_arrives_as_thought_parts_before_the_text(mock_provider: MockProvider) -> None:
    parts = [
        p
        for c in stream(mock_provider, "[[mock:thinking]] why")
        for p in c.candidates[0].content.parts
    ]

    thoughts = [i for i, p in enumerate(parts) if p.thought]
    answers = [i for i, p in enumerate(parts) if p.text and not p.thought]
    assert thoughts and answers and max(thoughts) < min(answers)


# scenario -> the google.rpc.Status the Gemini API answers with (HTTP status == code)
GOOGLE_ERRORS = {
    "overloaded": (503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
    "rate-limited:1:7": (
        429,
        "RESOURCE_EXHAUSTED",
        "Resource has been exhausted (e.g. check quota).",
    ),
    "server-error": (500, "INTERNAL", "An internal error has occurred."),
    "server-error:1:503": (503, "UNAVAILABLE", "The service is currently unavailable."),
    "quota": (429, "RESOURCE_EXHAUSTED", "You exceeded your current quota"),
    "auth": (400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."),
}


@pytest.mark.parametrize("scenario", sorted(GOOGLE_ERRORS))
def test_http_failures_are_google_status_envelopes(
    mock_provider: MockProvider, scenario: str
) -> None:
    response = raw_post(mock_provider, GEMINI, json=raw_body(GEMINI, f"[[mock:{scenario}]] hi"))

    code, status, message = GOOGLE_ERRORS[scenario]
    error = response.json()["error"]
    assert response.status_code == error["code"] == code
    assert error["status"] == status and error["message"].startswith(message)
    assert "retry-after" not in response.headers  # Google says it in the body, if at all


def test_a_rate_limit_says_when_to_retry_in_retry_info(mock_provider: MockProvider) -> None:
    with pytest.raises(genai_errors.ClientError) as raised:
        stream(mock_provider, "[[mock:rate-limited:1:7]] hi")

    (retry,) = raw_retry_infos(raised.value.details)
    assert (raised.value.code, raised.value.status) == (429, "RESOURCE_EXHAUSTED")
    assert retry == {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}


def raw_retry_infos(details: dict) -> list[dict]:
    return [d for d in details["error"].get("details", []) if d["@type"].endswith("RetryInfo")]


def test_an_error_after_text_is_an_error_event_in_the_stream(mock_provider: MockProvider) -> None:
    response = raw_post(
        mock_provider, GEMINI, json=raw_body(GEMINI, "[[mock:overloaded-after-text]] hi")
    )

    *chunks, failure = sse_payloads(response.content)
    assert response.status_code == 200 and chunks
    assert failure == {
        "error": {
            "code": 503,
            "message": "The model is overloaded. Please try again later.",
            "status": "UNAVAILABLE",
        }
    }


def test_an_incident_fails_with_the_status_it_was_given(mock_provider: MockProvider) -> None:
    mock_provider.incident_start(seconds=30, status=529)

    with pytest.raises(genai_errors.APIError) as raised:
        stream(mock_provider, "hi")

    assert raised.value.details == {
        "error": {
            "code": 529,
            "message": "The model is overloaded. Please try again later.",
            "status": "UNAVAILABLE",
        }
    }


def test_count_tokens_answers_without_touching_the_script(mock_provider: MockProvider) -> None:
    models = gemini_client(mock_provider).models
    prompt = "[[mock:overloaded:1]] one two three"

    counted = models.count_tokens(model=GEMINI_MODEL, contents=prompt)
    with pytest.raises(genai_errors.ServerError):
        models.generate_content(model=GEMINI_MODEL, contents=prompt)

    assert counted.total_tokens == 4
    assert mock_provider.count() == 1  # countTokens is no model call
    assert [r["operation"] for r in mock_provider.requests()] == ["count_tokens", "generate"]
