"""OpenAI Responses wire (`POST /v1/responses`, what Codex speaks): typed SSE events and the body.

A streamed answer is `response.created`, `response.in_progress`, then per output item
`response.output_item.added` ... `response.output_item.done` (a message's text arrives as
`response.output_text.delta` inside a content part; a function call's arguments as
`response.function_call_arguments.delta`; a freeform tool's input, such as Codex's apply_patch,
as a `custom_tool_call` item with `response.custom_tool_call_input.delta`), then
`response.completed` with the usage. Every event carries its `type` and a `sequence_number`. A
failure inside the stream is an `error` event followed by `response.failed` whose
`response.error` holds the code Codex reads (`server_is_overloaded`, `rate_limit_exceeded` with
"try again in Ns", `insufficient_quota`, ...). HTTP failures use the same error JSON as Chat
Completions (errors.openai_error).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from recovery.mock.errors import openai_error
from recovery.mock.steps import (
    Delay,
    Drop,
    Emitted,
    Fail,
    Failure,
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

CREATED_AT = 1_800_000_000
_MALFORMED = (
    b"event: response.output_text.delta\n"
    b'data: {"type": "response.output_text.delta", "sequence_number": 9, "delta": "Hel\n\n'
)
_OVERLOADED_IN_STREAM = (
    "server_is_overloaded",
    "Selected model is at capacity. Please try a different model.",
)


def stream_error(fail: Fail) -> dict:
    """`response.error` for a failure inside a stream: {code, message}."""
    if fail.failure is Failure.OVERLOADED:
        code, message = _OVERLOADED_IN_STREAM
        return {"code": code, "message": message}
    error = openai_error(fail).body["error"]
    code = error.get("code")
    if fail.failure is Failure.SERVER_ERROR or not isinstance(code, str):
        code = "server_error"
    return {"code": code, "message": str(error.get("message", ""))}


def _response(reply: Reply, *, status: str, output: list[dict], **fields: object) -> dict:
    return {
        "id": reply.message_id,
        "object": "response",
        "created_at": CREATED_AT,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": reply.model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": None,
        "user": None,
        "metadata": {},
        **fields,
    }


def _usage(reply: Reply, output_tokens: int) -> dict:
    return {
        "input_tokens": reply.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.input_tokens + output_tokens,
    }


class _Events:
    """Frames typed events and numbers them, as the real stream does."""

    def __init__(self) -> None:
        self.sequence = 0

    def __call__(self, name: str, **fields: object) -> bytes:
        payload = {"type": name, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()


def _item_id(kind: str, reply: Reply, index: int) -> str:
    return f"{kind}_{reply.message_id.removeprefix('resp_')}_{index}"


def _output_text(text: str) -> dict:
    return {"type": "output_text", "annotations": [], "logprobs": [], "text": text}


def _message_item(item_id: str, text: str) -> dict:
    content = [_output_text(text)]
    return {
        "id": item_id,
        "type": "message",
        "status": "completed",
        "content": content,
        "role": "assistant",
    }


def _reasoning_item(item_id: str, text: str) -> dict:
    return {"id": item_id, "type": "reasoning", "summary": [{"type": "summary_text", "text": text}]}


def _call_id(step: Tool) -> str:
    return step.id.replace("toolu_", "call_", 1)


def _function_item(item_id: str, step: Tool, *, arguments: str, status: str) -> dict:
    if step.freeform:
        return {
            "id": item_id,
            "type": "custom_tool_call",
            "status": status,
            "input": arguments,
            "call_id": _call_id(step),
            "name": step.name,
        }
    return {
        "id": item_id,
        "type": "function_call",
        "status": status,
        "arguments": arguments,
        "call_id": _call_id(step),
        "name": step.name,
    }


def _message(
    emit: _Events, step: Text, index: int, item_id: str, pause: Delay | None
) -> Iterator[Emitted | dict]:
    place = {"item_id": item_id, "output_index": index, "content_index": 0}
    in_progress = {**_message_item(item_id, ""), "status": "in_progress", "content": []}
    yield emit("response.output_item.added", output_index=index, item=in_progress)
    yield emit("response.content_part.added", **place, part=_output_text(""))
    for chunk in step.chunks:
        if pause:
            yield pause
        yield emit("response.output_text.delta", **place, delta=chunk, logprobs=[])
    if not step.complete:
        return
    text = "".join(step.chunks)
    yield emit("response.output_text.done", **place, text=text, logprobs=[])
    yield emit("response.content_part.done", **place, part=_output_text(text))
    item = _message_item(item_id, text)
    yield emit("response.output_item.done", output_index=index, item=item)
    yield item


def _reasoning(emit: _Events, step: Thinking, index: int, item_id: str) -> Iterator[Emitted | dict]:
    place = {"item_id": item_id, "output_index": index, "summary_index": 0}
    added = {"id": item_id, "type": "reasoning", "summary": []}
    yield emit("response.output_item.added", output_index=index, item=added)
    yield emit(
        "response.reasoning_summary_part.added", **place, part={"type": "summary_text", "text": ""}
    )
    for chunk in step.chunks:
        yield emit("response.reasoning_summary_text.delta", **place, delta=chunk)
    text = "".join(step.chunks)
    yield emit("response.reasoning_summary_text.done", **place, text=text)
    yield emit(
        "response.reasoning_summary_part.done", **place, part={"type": "summary_text", "text": text}
    )
    item = _reasoning_item(item_id, text)
    yield emit("response.output_item.done", output_index=index, item=item)
    yield item


def _function_call(emit: _Events, step: Tool, index: int, item_id: str) -> Iterator[Emitted | dict]:
    added = _function_item(item_id, step, arguments="", status="in_progress")
    yield emit("response.output_item.added", output_index=index, item=added)
    events = (
        "response.custom_tool_call_input" if step.freeform else "response.function_call_arguments"
    )
    field = "input" if step.freeform else "arguments"
    for chunk in step.argument_chunks:
        yield emit(f"{events}.delta", item_id=item_id, output_index=index, delta=chunk)
    if not step.complete:
        return
    arguments = "".join(step.argument_chunks)
    yield emit(f"{events}.done", item_id=item_id, output_index=index, **{field: arguments})
    item = _function_item(item_id, step, arguments=arguments, status="completed")
    yield emit("response.output_item.done", output_index=index, item=item)
    yield item


def render_stream(plan: Plan, reply: Reply) -> Iterator[Emitted]:
    emit = _Events()
    output: list[dict] = []  # finished items, for the closing response object
    output_tokens = 0
    pause = Delay(plan.delta_delay_ms) if plan.delta_delay_ms else None
    for step in plan.steps:
        index = len(output)
        match step:
            case Start():
                started = _response(reply, status="in_progress", output=[])
                yield emit("response.created", response=started)
                yield emit("response.in_progress", response=started)
                continue
            case Text():
                items = _message(emit, step, index, _item_id("msg", reply, index), pause)
                output_tokens += len(step.chunks)
            case Thinking():
                items = _reasoning(emit, step, index, _item_id("rs", reply, index))
                output_tokens += len(step.chunks)
            case Tool():
                items = _function_call(emit, step, index, _item_id("fc", reply, index))
                output_tokens += len(step.argument_chunks)
            case Ping():
                yield b": ping\n\n"
                continue
            case Delay() | Drop():
                yield step
                continue
            case StreamError(fail=fail) | HttpError(fail=fail):
                error = stream_error(fail)
                yield emit("error", code=error["code"], message=error["message"], param=None)
                failed = _response(reply, status="failed", output=output, error=error)
                yield emit("response.failed", response=failed)
                continue
            case Malformed():
                yield _MALFORMED
                continue
            case Finish(stop_reason=reason):
                yield _finished(emit, reply, output, reason, output_tokens)
                continue
        for emitted in items:
            if isinstance(emitted, dict):
                output.append(emitted)
            else:
                yield emitted


def _finished(emit: _Events, reply: Reply, output: list[dict], reason: str, tokens: int) -> bytes:
    usage = _usage(reply, tokens)
    if reason == "max_tokens":
        incomplete = {"reason": "max_output_tokens"}
        body = _response(
            reply, status="incomplete", output=output, usage=usage, incomplete_details=incomplete
        )
        return emit("response.incomplete", response=body)
    body = _response(reply, status="completed", output=output, usage=usage)
    return emit("response.completed", response=body)


def render_response(plan: Plan, reply: Reply) -> dict:
    output: list[dict] = []
    status, incomplete, tokens = "completed", None, 0
    for step in plan.steps:
        index = len(output)
        match step:
            case Text(chunks=chunks):
                output.append(_message_item(_item_id("msg", reply, index), "".join(chunks)))
                tokens += len(chunks)
            case Thinking(chunks=chunks):
                output.append(_reasoning_item(_item_id("rs", reply, index), "".join(chunks)))
                tokens += len(chunks)
            case Tool(argument_chunks=chunks):
                arguments = "".join(chunks)
                item_id = _item_id("fc", reply, index)
                output.append(
                    _function_item(item_id, step, arguments=arguments, status="completed")
                )
                tokens += len(chunks)
            case Finish(stop_reason="max_tokens"):
                status, incomplete = "incomplete", {"reason": "max_output_tokens"}
    return _response(
        reply,
        status=status,
        output=output,
        usage=_usage(reply, max(1, tokens)),
        incomplete_details=incomplete,
    )
