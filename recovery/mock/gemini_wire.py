"""Gemini API wire (what Gemini CLI speaks): `models/{model}:streamGenerateContent?alt=sse`,
`:generateContent` and `:countTokens`.

Each SSE event is one whole GenerateContentResponse (`data: {...}` and a CRLF blank line):
`candidates[0].content.parts` carry text (`"thought": true` for thinking) or a whole
`functionCall` (Gemini never splits arguments), and the last chunk carries `finishReason` and the
full `usageMetadata`. There is no start event and no keepalive: a `Start` renders as nothing and a
stall is plain silence. A failure inside the stream is a `data: {"error": {...}}` event with the
same google.rpc.Status envelope as the HTTP errors (errors.gemini_error).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from recovery.mock.errors import gemini_error
from recovery.mock.steps import (
    Delay,
    Drop,
    Emitted,
    Finish,
    HttpError,
    Malformed,
    Plan,
    Reply,
    StreamError,
    Text,
    Thinking,
    Tool,
)

FINISH_REASONS = {"end_turn": "STOP", "tool_use": "STOP", "max_tokens": "MAX_TOKENS"}
_MALFORMED = b'data: {"candidates": [{"content": {"parts": [{"text": "Hel\r\n\r\n'


def _event(payload: dict) -> bytes:
    return f"data: {json.dumps(payload)}\r\n\r\n".encode()


def _usage(reply: Reply, output_tokens: int | None = None) -> dict:
    usage = {"promptTokenCount": reply.input_tokens, "totalTokenCount": reply.input_tokens}
    if output_tokens is not None:
        usage["candidatesTokenCount"] = output_tokens
        usage["totalTokenCount"] = reply.input_tokens + output_tokens
    return usage


def _candidate_response(
    reply: Reply, parts: list[dict], *, finish: str | None = None, usage: dict
) -> dict:
    candidate: dict = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": reply.model,
        "responseId": reply.message_id,
    }


def _function_call(step: Tool) -> dict:
    return {"functionCall": {"name": step.name, "args": json.loads("".join(step.argument_chunks))}}


def render_stream(plan: Plan, reply: Reply) -> Iterator[Emitted]:
    output_tokens = 0
    pause = Delay(plan.delta_delay_ms) if plan.delta_delay_ms else None

    def chunk(parts: list[dict]) -> bytes:
        return _event(_candidate_response(reply, parts, usage=_usage(reply)))

    for step in plan.steps:
        match step:
            case Text(chunks=chunks):
                for piece in chunks:
                    if pause:
                        yield pause
                    output_tokens += 1
                    yield chunk([{"text": piece}])
            case Thinking(chunks=chunks):
                for piece in chunks:
                    output_tokens += 1
                    yield chunk([{"text": piece, "thought": True}])
            case Tool(complete=True):
                output_tokens += len(step.argument_chunks)
                yield chunk([_function_call(step)])
            case Delay() | Drop():
                yield step
            case StreamError(fail=fail) | HttpError(fail=fail):
                yield _event(gemini_error(fail).body)
            case Malformed():
                yield _MALFORMED
            case Finish(stop_reason=reason):
                yield _event(
                    _candidate_response(
                        reply,
                        [{"text": ""}],
                        finish=FINISH_REASONS.get(reason, "OTHER"),
                        usage=_usage(reply, output_tokens),
                    )
                )
            # Start, Ping and a half-made Tool have no Gemini form: nothing is sent for them.


def render_response(plan: Plan, reply: Reply) -> dict:
    parts: list[dict] = []
    finish, output_tokens = None, 0
    for step in plan.steps:
        match step:
            case Text(chunks=chunks):
                parts.append({"text": "".join(chunks)})
                output_tokens += len(chunks)
            case Thinking(chunks=chunks):
                parts.append({"text": "".join(chunks), "thought": True})
                output_tokens += len(chunks)
            case Tool():
                parts.append(_function_call(step))
                output_tokens += len(step.argument_chunks)
            case Finish(stop_reason=reason):
                finish = FINISH_REASONS.get(reason, "OTHER")
    return _candidate_response(
        reply, parts, finish=finish, usage=_usage(reply, max(1, output_tokens))
    )


def render_token_count(*, total_tokens: int) -> dict:
    return {"totalTokens": total_tokens}
