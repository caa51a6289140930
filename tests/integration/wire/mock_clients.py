"""One runner per wire: the official SDK (retries off) over real HTTP, seen the same way.

Each runner sends one user prompt, streamed or not, and reports what a caller would see: the
text, whether the wire's own "finished" signal came, the events in order, and the exception the
SDK raised (none when a stream silently ends or fails in-band, as Responses does)."""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import anthropic
import httpx2
import openai

from recovery.mock.testing import (
    CONVERSATION_HEADER,
    FAKE_ANTHROPIC_KEY,
    FAKE_GEMINI_KEY,
    FAKE_OPENAI_KEY,
    MockProvider,
)
from recovery.mock.wires import ANTHROPIC, GEMINI, OPENAI_CHAT, OPENAI_RESPONSES

with warnings.catch_warnings():
    # google-genai 3.3 has docstrings with invalid escapes; harmless, and not ours to fix.
    warnings.simplefilter("ignore", SyntaxWarning)
    from google import genai
    from google.genai import errors as genai_errors
    from google.genai import types as genai_types

WIRES = [ANTHROPIC, OPENAI_CHAT, OPENAI_RESPONSES, GEMINI]
GEMINI_MODEL = "gemini-2.5-pro"
CAUGHT = (
    anthropic.APIError,
    openai.APIError,
    genai_errors.APIError,
    httpx2.HTTPError,
    ValueError,
)


@dataclass
class Run:
    kinds: list[str] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)  # seconds from the request, per chunk
    finished: bool = False  # the wire's own end-of-answer signal arrived
    failed_code: str | None = None  # Responses: response.error.code of a response.failed
    error: BaseException | None = None
    started: float = field(default_factory=time.monotonic)

    @property
    def text(self) -> str:
        return "".join(self.chunks)

    def chunk(self, text: str) -> None:
        self.chunks.append(text)
        self.arrivals.append(time.monotonic() - self.started)


def _headers(conversation: str | None) -> dict[str, str]:
    return {CONVERSATION_HEADER: conversation} if conversation else {}


# Clients are kept per base URL: building one (its TLS context above all) costs a quarter second.
@functools.cache
def _anthropic(base_url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key=FAKE_ANTHROPIC_KEY, base_url=base_url, max_retries=0)


@functools.cache
def _openai(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(api_key=FAKE_OPENAI_KEY, base_url=base_url, max_retries=0)


@functools.cache
def _gemini(base_url: str) -> genai.Client:
    # Gemini CLI speaks v1beta; the SDK would pick v1 for a custom base URL.
    options = genai_types.HttpOptions(base_url=base_url, api_version="v1beta")
    return genai.Client(api_key=FAKE_GEMINI_KEY, http_options=options)


def anthropic_client(mock: MockProvider, *, base_url: str | None = None) -> anthropic.Anthropic:
    return _anthropic(base_url or mock.url)


def openai_client(mock: MockProvider, *, base_url: str | None = None) -> openai.OpenAI:
    return _openai(base_url or f"{mock.url}/v1")


def gemini_client(mock: MockProvider, *, base_url: str | None = None) -> genai.Client:
    return _gemini(base_url or mock.url)


def run_anthropic(
    mock: MockProvider,
    text: str,
    *,
    stream: bool = True,
    conversation: str | None = None,
    base_url: str | None = None,
) -> Run:
    run = Run()
    client = anthropic_client(mock, base_url=base_url)
    request = {
        "model": "mock-1",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": text}],
        "extra_headers": _headers(conversation),
    }
    try:
        if not stream:
            message = client.messages.create(**request)
            run.chunks = [b.text for b in message.content if b.type == "text"]
            run.kinds = [b.type for b in message.content]
            run.finished = message.stop_reason is not None
            return run
        with client.messages.create(**request, stream=True) as events:
            for event in events:
                run.kinds.append(event.type)
                if event.type == "content_block_delta" and event.delta.type == "text_delta":
                    run.chunk(event.delta.text)
                run.finished = run.finished or event.type == "message_stop"
    except CAUGHT as error:
        run.error = error
    return run


def run_openai_chat(
    mock: MockProvider,
    text: str,
    *,
    stream: bool = True,
    conversation: str | None = None,
    base_url: str | None = None,
) -> Run:
    run = Run()
    request = {
        "model": "mock-1",
        "messages": [{"role": "user", "content": text}],
        "extra_headers": _headers(conversation),
    }
    try:
        if not stream:
            completion = openai_client(mock, base_url=base_url).chat.completions.create(**request)
            choice = completion.choices[0]
            run.chunks = [choice.message.content or ""]
            run.kinds = [choice.finish_reason or ""]
            run.finished = choice.finish_reason is not None
            return run
        chunks = openai_client(mock, base_url=base_url).chat.completions.create(
            **request, stream=True, stream_options={"include_usage": True}
        )
        for chunk in chunks:
            for choice in chunk.choices:
                if choice.delta.content:
                    run.chunk(choice.delta.content)
                if choice.delta.tool_calls:
                    run.kinds.append("tool_calls")
                if choice.finish_reason:
                    run.kinds.append(choice.finish_reason)
                    run.finished = True
            if chunk.usage is not None:
                run.kinds.append("usage")
    except CAUGHT as error:
        run.error = error
    return run


def run_openai_responses(
    mock: MockProvider,
    text: str,
    *,
    stream: bool = True,
    conversation: str | None = None,
    base_url: str | None = None,
) -> Run:
    run = Run()
    request = {"model": "gpt-5.4", "input": text, "extra_headers": _headers(conversation)}
    try:
        if not stream:
            response = openai_client(mock, base_url=base_url).responses.create(**request)
            run.chunks = [response.output_text]
            run.kinds = [item.type for item in response.output]
            run.finished = response.status == "completed"
            return run
        for event in openai_client(mock, base_url=base_url).responses.create(
            **request, stream=True
        ):
            run.kinds.append(event.type)
            if event.type == "response.output_text.delta":
                run.chunk(event.delta)
            elif event.type == "response.completed":
                run.finished = True
            elif event.type == "response.failed":
                run.failed_code = event.response.error.code
    except CAUGHT as error:
        run.error = error
    return run


def run_gemini(
    mock: MockProvider,
    text: str,
    *,
    stream: bool = True,
    conversation: str | None = None,
    base_url: str | None = None,
) -> Run:
    run = Run()
    config = genai_types.GenerateContentConfig(
        http_options=genai_types.HttpOptions(headers=_headers(conversation))
    )
    models = gemini_client(mock, base_url=base_url).models
    try:
        if not stream:
            response = models.generate_content(model=GEMINI_MODEL, contents=text, config=config)
            run.chunks = [response.text or ""]
            run.kinds = [str(response.candidates[0].finish_reason)]
            run.finished = response.candidates[0].finish_reason is not None
            return run
        for chunk in models.generate_content_stream(
            model=GEMINI_MODEL, contents=text, config=config
        ):
            candidate = chunk.candidates[0]
            for part in candidate.content.parts or ():
                if part.function_call is not None:
                    run.kinds.append("function_call")
                elif part.thought:
                    run.kinds.append("thought")
                elif part.text:
                    run.chunk(part.text)
            if candidate.finish_reason is not None:
                run.kinds.append(f"finish:{candidate.finish_reason.value}")
                run.finished = True
    except CAUGHT as error:
        run.error = error
    return run


RUNNERS: dict[str, Callable[..., Run]] = {
    ANTHROPIC: run_anthropic,
    OPENAI_CHAT: run_openai_chat,
    OPENAI_RESPONSES: run_openai_responses,
    GEMINI: run_gemini,
}


def run(wire: str, mock: MockProvider, text: str, **options) -> Run:
    """``options``: stream (default True), conversation (sent as the header), base_url."""
    return RUNNERS[wire](mock, text, **options)


def status_of(error: BaseException | None) -> int | None:
    """The HTTP status an SDK error carries (Gemini's errors call it `code`)."""
    if isinstance(error, genai_errors.APIError):
        return error.code
    return getattr(error, "status_code", None)


# ---- raw HTTP, for what an SDK would hide (keepalives, refusals of malformed requests) ---------

RAW_PATHS = {
    ANTHROPIC: "/v1/messages",
    OPENAI_CHAT: "/v1/chat/completions",
    OPENAI_RESPONSES: "/v1/responses",
    GEMINI: f"/v1beta/models/{GEMINI_MODEL}:streamGenerateContent?alt=sse",
}
RAW_CREDENTIALS = {
    ANTHROPIC: {"x-api-key": FAKE_ANTHROPIC_KEY},
    OPENAI_CHAT: {"authorization": f"Bearer {FAKE_OPENAI_KEY}"},
    OPENAI_RESPONSES: {"authorization": f"Bearer {FAKE_OPENAI_KEY}"},
    GEMINI: {"x-goog-api-key": FAKE_GEMINI_KEY},
}


def raw_body(wire: str, text: str) -> dict:
    """The smallest streamed request each wire accepts, asking ``text``."""
    if wire == ANTHROPIC:
        return {
            "model": "mock-1",
            "max_tokens": 64,
            "stream": True,
            "messages": [{"role": "user", "content": text}],
        }
    if wire == OPENAI_CHAT:
        return {"model": "mock-1", "stream": True, "messages": [{"role": "user", "content": text}]}
    if wire == OPENAI_RESPONSES:
        return {"model": "gpt-5.4", "stream": True, "input": text}
    return {"contents": [{"role": "user", "parts": [{"text": text}]}]}


def raw_post(
    mock: MockProvider,
    wire: str,
    *,
    json: object = None,
    content: bytes | None = None,
    credential: bool = True,
    path: str | None = None,
    headers: dict[str, str] | None = None,
) -> httpx2.Response:
    sent = {**(RAW_CREDENTIALS[wire] if credential else {}), **(headers or {})}
    if content is not None:
        sent.setdefault("content-type", "application/json")
    return httpx2.post(
        f"{mock.url}{path or RAW_PATHS[wire]}", json=json, content=content, headers=sent
    )
