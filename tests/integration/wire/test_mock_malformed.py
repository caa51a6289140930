"""Malformed requests to the mock are refused in the wire's own error shape, saying what is wrong,
and the refusal is in the request log."""

from __future__ import annotations

import httpx2
import openai
import pytest

from recovery.mock.testing import MockProvider
from recovery.mock.wires import ANTHROPIC, GEMINI, OPENAI_CHAT, OPENAI_RESPONSES

from .mock_clients import WIRES, openai_client, raw_post


def refusal(wire: str, response: httpx2.Response, status: int = 400) -> str:
    """The message of a refusal, after checking it has the wire's real error shape."""
    body = response.json()
    assert response.status_code == status
    if wire == ANTHROPIC:
        assert body["type"] == "error" and body["error"]["type"].endswith("_error")
    elif wire == GEMINI:
        assert body["error"]["code"] == status and body["error"]["status"]
    else:
        assert set(body["error"]) == {"message", "type", "param", "code"}
    return body["error"]["message"]


@pytest.mark.parametrize("wire", WIRES)
def test_a_body_that_is_not_json_is_refused(mock_provider: MockProvider, wire: str) -> None:
    response = raw_post(mock_provider, wire, content=b"{not json")

    assert refusal(wire, response) == "the request body is not JSON"
    assert mock_provider.requests()[0]["status"] == 400


@pytest.mark.parametrize("wire", WIRES)
def test_a_body_that_is_not_an_object_is_refused(mock_provider: MockProvider, wire: str) -> None:
    response = raw_post(mock_provider, wire, json=["hi"])

    assert refusal(wire, response) == "the request body is not a JSON object"


MISSING = {
    ANTHROPIC: ({"model": "m", "max_tokens": 9}, "messages: Field required"),
    OPENAI_CHAT: ({"model": "m"}, "Missing required parameter: 'messages'"),
    OPENAI_RESPONSES: ({"model": "m", "stream": True}, "Missing required parameter: 'input'"),
    GEMINI: ({"generationConfig": {}}, "contents is not specified"),
}


@pytest.mark.parametrize("wire", WIRES)
def test_a_body_missing_what_the_wire_needs_names_the_field(
    mock_provider: MockProvider, wire: str
) -> None:
    body, complaint = MISSING[wire]

    assert complaint in refusal(wire, raw_post(mock_provider, wire, json=body))
    assert complaint in mock_provider.requests()[0]["error"]


MISSING_CREDENTIAL = {ANTHROPIC: 401, OPENAI_CHAT: 401, OPENAI_RESPONSES: 401, GEMINI: 403}


@pytest.mark.parametrize("wire", WIRES)
def test_a_request_without_a_key_is_refused_like_the_real_api(
    mock_provider: MockProvider, wire: str
) -> None:
    response = raw_post(mock_provider, wire, json={}, credential=False)

    refusal(wire, response, status=MISSING_CREDENTIAL[wire])
    assert mock_provider.requests()[0]["scenario"] == "auth-missing"


def test_gemini_takes_the_key_as_a_query_parameter_too(mock_provider: MockProvider) -> None:
    path = "/v1beta/models/gemini-2.5-pro:generateContent?key=AIzaSy-test-000"
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}

    response = raw_post(mock_provider, GEMINI, json=body, credential=False, path=path)

    assert response.status_code == 200 and response.json()["candidates"]


def test_an_unknown_gemini_method_is_not_found(mock_provider: MockProvider) -> None:
    path = "/v1beta/models/gemini-2.5-pro:embedContent"

    message = refusal(GEMINI, raw_post(mock_provider, GEMINI, json={}, path=path), status=404)

    assert "no method 'embedContent'" in message and "streamGenerateContent" in message


def test_a_gemini_stream_without_alt_sse_is_refused(mock_provider: MockProvider) -> None:
    path = "/v1beta/models/gemini-2.5-pro:streamGenerateContent"

    message = refusal(GEMINI, raw_post(mock_provider, GEMINI, json={}, path=path))

    assert "add ?alt=sse" in message


def test_the_sdk_surfaces_the_refusal_as_a_bad_request(mock_provider: MockProvider) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        openai_client(mock_provider).responses.create(model="gpt-5.4", input=42)

    assert "Missing required parameter: 'input'" in raised.value.message
