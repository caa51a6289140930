"""The four wires the mock speaks, each one value: how it reads a request and renders a reply."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from aiohttp import web

from recovery.mock import anthropic_wire, gemini_wire, openai_wire, responses_wire
from recovery.mock.errors import ErrorResponse, anthropic_error, gemini_error, openai_error
from recovery.mock.history import (
    History,
    anthropic_history,
    gemini_contents,
    gemini_history,
    openai_history,
    responses_history,
)
from recovery.mock.steps import Emitted, Fail, Plan, Reply

ANTHROPIC = "anthropic"
OPENAI_CHAT = "openai"
OPENAI_RESPONSES = "openai-responses"
GEMINI = "gemini"


def _problem_anthropic(body: dict) -> str | None:
    if not isinstance(body.get("model"), str):
        return "model: Field required"
    if not isinstance(body.get("messages"), list):
        return "messages: Field required (a list of messages)"
    if not isinstance(body.get("max_tokens"), int):
        return "max_tokens: Field required"
    return None


def _problem_openai_chat(body: dict) -> str | None:
    if not isinstance(body.get("model"), str):
        return "Missing required parameter: 'model'."
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        return "Missing required parameter: 'messages' (a non-empty list)."
    return None


def _problem_responses(body: dict) -> str | None:
    if not isinstance(body.get("model"), str):
        return "Missing required parameter: 'model'."
    if not isinstance(body.get("input"), str | list):
        return "Missing required parameter: 'input' (a string or a list of input items)."
    return None


def _problem_gemini(body: dict) -> str | None:
    contents = gemini_contents(body)
    if not isinstance(contents, list) or not contents:
        return "* GenerateContentRequest.contents: contents is not specified"
    if not all(isinstance(c, dict) and isinstance(c.get("parts"), list) for c in contents):
        return "* GenerateContentRequest.contents: every content needs a list of parts"
    return None


def _bearer(request: web.Request) -> str:
    return request.headers.get("authorization", "")


def _anthropic_key(request: web.Request) -> str:
    return request.headers.get("x-api-key") or _bearer(request)


def _google_key(request: web.Request) -> str:
    return request.headers.get("x-goog-api-key") or request.query.get("key") or _bearer(request)


@dataclass(frozen=True, slots=True)
class Wire:
    name: str
    credential: Callable[[web.Request], str]  # "" when the request carries none
    problem: Callable[[dict], str | None]  # what is wrong with a JSON body, in the wire's words
    history: Callable[[dict], History]
    error: Callable[[Fail], ErrorResponse]
    render_stream: Callable[[Plan, Reply], Iterator[Emitted]]
    render_whole: Callable[[Plan, Reply], dict]
    message_id_prefix: str
    missing_credential_status: int = 0  # 0: the error's usual status

    def message_id(self, number: int) -> str:
        return f"{self.message_id_prefix}{number:06d}"


WIRES = {
    ANTHROPIC: Wire(
        ANTHROPIC,
        _anthropic_key,
        _problem_anthropic,
        anthropic_history,
        anthropic_error,
        anthropic_wire.render_stream,
        anthropic_wire.render_message,
        "msg_mock_",
    ),
    OPENAI_CHAT: Wire(
        OPENAI_CHAT,
        _bearer,
        _problem_openai_chat,
        openai_history,
        openai_error,
        openai_wire.render_stream,
        openai_wire.render_completion,
        "chatcmpl-mock",
    ),
    OPENAI_RESPONSES: Wire(
        OPENAI_RESPONSES,
        _bearer,
        _problem_responses,
        responses_history,
        openai_error,
        responses_wire.render_stream,
        responses_wire.render_response,
        "resp_mock",
    ),
    GEMINI: Wire(
        GEMINI,
        _google_key,
        _problem_gemini,
        gemini_history,
        gemini_error,
        gemini_wire.render_stream,
        gemini_wire.render_response,
        "mock",
        missing_credential_status=403,
    ),
}
