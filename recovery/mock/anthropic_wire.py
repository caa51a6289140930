"""Anthropic Messages wire: SSE framing and the non-streaming message body."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from recovery.mock.errors import anthropic_error
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

_SIGNATURE = "c2lnbmF0dXJlLW1vY2s="
_MALFORMED = (
    b"event: content_block_delta\n"
    b'data: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_de\n\n'
)


def _event(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _block_start(index: int, block: dict) -> bytes:
    payload = {"type": "content_block_start", "index": index, "content_block": block}
    return _event("content_block_start", payload)


def _block_delta(index: int, delta: dict) -> bytes:
    payload = {"type": "content_block_delta", "index": index, "delta": delta}
    return _event("content_block_delta", payload)


def _block_stop(index: int) -> bytes:
    return _event("content_block_stop", {"type": "content_block_stop", "index": index})


def _message_start(*, model: str, input_tokens: int, message_id: str) -> bytes:
    message: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1},
    }
    return _event("message_start", {"type": "message_start", "message": message})


def _text_block(step: Text, index: int, pause: Delay | None) -> Iterator[Emitted]:
    yield _block_start(index, {"type": "text", "text": ""})
    if index == 0:
        yield _event("ping", {"type": "ping"})  # real streams ping right after the first block
    for chunk in step.chunks:
        if pause:
            yield pause
        yield _block_delta(index, {"type": "text_delta", "text": chunk})
    if step.complete:
        yield _block_stop(index)


def _thinking_block(step: Thinking, index: int) -> Iterator[Emitted]:
    yield _block_start(index, {"type": "thinking", "thinking": "", "signature": ""})
    for chunk in step.chunks:
        yield _block_delta(index, {"type": "thinking_delta", "thinking": chunk})
    yield _block_delta(index, {"type": "signature_delta", "signature": _SIGNATURE})
    yield _block_stop(index)


def _tool_block(step: Tool, index: int) -> Iterator[Emitted]:
    yield _block_start(index, {"type": "tool_use", "id": step.id, "name": step.name, "input": {}})
    for chunk in step.argument_chunks:
        yield _block_delta(index, {"type": "input_json_delta", "partial_json": chunk})
    if step.complete:
        yield _block_stop(index)


def render_stream(plan: Plan, reply: Reply) -> Iterator[Emitted]:
    index = 0
    output_tokens = 0
    pause = Delay(plan.delta_delay_ms) if plan.delta_delay_ms else None
    for step in plan.steps:
        match step:
            case Start():
                yield _message_start(
                    model=reply.model, input_tokens=reply.input_tokens, message_id=reply.message_id
                )
            case Text():
                yield from _text_block(step, index, pause)
                index, output_tokens = index + 1, output_tokens + len(step.chunks)
            case Thinking():
                yield from _thinking_block(step, index)
                index, output_tokens = index + 1, output_tokens + len(step.chunks)
            case Tool():
                yield from _tool_block(step, index)
                index, output_tokens = index + 1, output_tokens + len(step.argument_chunks)
            case Ping():
                yield _event("ping", {"type": "ping"})
            case Delay() | Drop():
                yield step
            case StreamError(fail=fail) | HttpError(fail=fail):
                yield _event("error", anthropic_error(fail).body)
            case Malformed():
                yield _MALFORMED
            case Finish(stop_reason=reason):
                delta = {
                    "type": "message_delta",
                    "delta": {"stop_reason": reason, "stop_sequence": None},
                    "usage": {"output_tokens": output_tokens},
                }
                yield _event("message_delta", delta)
                yield _event("message_stop", {"type": "message_stop"})


def render_message(plan: Plan, reply: Reply) -> dict:
    content: list[dict] = []
    stop_reason = None
    for step in plan.steps:
        match step:
            case Text(chunks=chunks):
                content.append({"type": "text", "text": "".join(chunks)})
            case Thinking(chunks=chunks):
                thought = "".join(chunks)
                content.append({"type": "thinking", "thinking": thought, "signature": _SIGNATURE})
            case Tool(id=tool_id, name=name, argument_chunks=chunks):
                arguments = json.loads("".join(chunks))
                content.append(
                    {"type": "tool_use", "id": tool_id, "name": name, "input": arguments}
                )
            case Finish(stop_reason=reason):
                stop_reason = reason
    return {
        "id": reply.message_id,
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": reply.input_tokens, "output_tokens": max(1, len(content))},
    }
