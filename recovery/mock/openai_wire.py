"""OpenAI Chat Completions wire: SSE chunks, the usage chunk, `[DONE]`, and the plain body."""

from __future__ import annotations

import json
from collections.abc import Iterator

from recovery.mock.errors import openai_error
from recovery.mock.steps import (
    Delay,
    Drop,
    Emitted,
    Finish,
    HttpError,
    Malformed,
    Ping,
    Plan,
    Reply,
    Start,
    StreamError,
    Text,
    Thinking,
    Tool,
)

FINISH_REASONS = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


def _data(payload: dict) -> bytes:
    return f"data: {json.dumps(payload)}\n\n".encode()


def render_stream(plan: Plan, reply: Reply) -> Iterator[Emitted]:
    model, message_id, input_tokens = reply.model, reply.message_id, reply.input_tokens

    def chunk(delta: dict, finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return _data(
            {
                "id": message_id,
                "object": "chat.completion.chunk",
                "created": 1_800_000_000,
                "model": model,
                "choices": [choice],
            }
        )

    tool_index = 0
    output_tokens = 0
    pause = Delay(plan.delta_delay_ms) if plan.delta_delay_ms else None
    for step in plan.steps:
        match step:
            case Start():
                yield chunk({"role": "assistant", "content": ""})
            case Text(chunks=chunks):
                for piece in chunks:
                    if pause:
                        yield pause
                    output_tokens += 1
                    yield chunk({"content": piece})
            case Thinking(chunks=chunks):
                for piece in chunks:
                    output_tokens += 1
                    yield chunk({"reasoning_content": piece})
            case Tool(id=tool_id, name=name, argument_chunks=pieces):
                head = {"index": tool_index, "id": tool_id, "type": "function"}
                yield chunk({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})
                for piece in pieces:
                    output_tokens += 1
                    yield chunk(
                        {"tool_calls": [{"index": tool_index, "function": {"arguments": piece}}]}
                    )
                tool_index += 1
            case Ping():
                yield b": ping\n\n"
            case Delay() | Drop():
                yield step
            case StreamError(fail=fail) | HttpError(fail=fail):
                yield _data({"error": openai_error(fail).body["error"]})
            case Malformed():
                yield b'data: {"id": "chatcmpl-mock", "choices": [{"delta": {"content": "Hel\n\n'
            case Finish(stop_reason=reason):
                yield chunk({}, FINISH_REASONS.get(reason, reason))
                if reply.include_usage:
                    usage = {
                        "prompt_tokens": input_tokens,
                        "completion_tokens": output_tokens,
                        "total_tokens": input_tokens + output_tokens,
                    }
                    yield _data(
                        {
                            "id": message_id,
                            "object": "chat.completion.chunk",
                            "created": 1_800_000_000,
                            "model": model,
                            "choices": [],
                            "usage": usage,
                        }
                    )
                yield b"data: [DONE]\n\n"


def render_completion(plan: Plan, reply: Reply) -> dict:
    model, message_id, input_tokens = reply.model, reply.message_id, reply.input_tokens
    text, reasoning, tool_calls, finish = "", "", [], None
    for step in plan.steps:
        match step:
            case Text(chunks=chunks):
                text += "".join(chunks)
            case Thinking(chunks=chunks):
                reasoning += "".join(chunks)
            case Tool(id=tool_id, name=name, argument_chunks=pieces):
                function = {"name": name, "arguments": "".join(pieces)}
                tool_calls.append({"id": tool_id, "type": "function", "function": function})
            case Finish(stop_reason=reason):
                finish = FINISH_REASONS.get(reason, reason)
    message: dict = {"role": "assistant", "content": text or None}
    if reasoning:
        message["reasoning_content"] = reasoning
    if tool_calls:
        message["tool_calls"] = tool_calls
    output_tokens = max(1, len(text.split()))
    return {
        "id": message_id,
        "object": "chat.completion",
        "created": 1_800_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": input_tokens,
            "completion_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        },
    }
