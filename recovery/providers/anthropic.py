"""Anthropic Messages through the official SDK: request translation and stream decoding.

The SDK sends the request (auth, headers, HTTP error decoding) with its retries off; the body is
decoded here because the SDK's iterator hides pings and turns an in-stream `event: error` into
an APIStatusError whose status is the meaningless 200.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic

from recovery.clock import Clock
from recovery.model_call import ModelCall, TextPart, ToolResultPart, ToolUsePart
from recovery.providers.abortable_http import Resolver, sdk_client
from recovery.providers.base import ByteObserver, Metadata, StreamTimeouts, TargetConfig, WireItem
from recovery.providers.failures import stream_error_failure, wire_failure
from recovery.providers.httpwire import SdkErrors, SSEResponseStream, sse_open
from recovery.providers.sse import ServerSentEvent
from recovery.stream_events import TextDelta, ThinkingDelta, ToolCall, TurnEnd, Usage
from recovery.taxonomy import Kind, Phase, ProviderFailure

_MESSAGE_START = Metadata("message_start")
_PING = Metadata("ping")
_BLOCK = Metadata("content_block")


def anthropic_request(call: ModelCall, *, model: str) -> dict[str, Any]:
    messages = []
    for turn in call.turns:
        content = [_block(part) for part in turn.parts]
        if content:
            messages.append({"role": turn.role, "content": content})
    params: dict[str, Any] = {"model": model, "max_tokens": call.max_tokens, "messages": messages}
    if call.system:
        params["system"] = call.system
    if call.tools:
        params["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in call.tools
        ]
    return params


def _block(part: TextPart | ToolUsePart | ToolResultPart) -> dict[str, Any]:
    match part:
        case TextPart(text=text):
            return {"type": "text", "text": text}
        case ToolUsePart(id=tool_id, name=name, arguments=arguments):
            return {"type": "tool_use", "id": tool_id, "name": name, "input": arguments}
        case ToolResultPart(tool_call_id=tool_id, content=content, is_error=is_error):
            return {
                "type": "tool_result",
                "tool_use_id": tool_id,
                "content": content,
                "is_error": is_error,
            }
    raise TypeError(f"unknown part {type(part).__name__}")


class AnthropicDecoder:
    """Messages SSE -> wire items. A tool call escapes only when its block stops."""

    __slots__ = (
        "_blocks",
        "_input_tokens",
        "_model",
        "_output_tokens",
        "_started",
        "_stop_reason",
        "_terminal",
    )

    def __init__(self, *, model: str) -> None:
        self._model = model
        self._started = False
        self._terminal = False
        self._blocks: dict[int, dict[str, Any]] = {}
        self._input_tokens = 0
        self._output_tokens = 0
        self._stop_reason: str | None = None

    def feed(self, event: ServerSentEvent) -> list[WireItem]:
        if self._terminal:
            return []
        if event.event == "ping":
            return [_PING]
        try:
            payload = json.loads(event.data)
        except (ValueError, RecursionError):
            raise self._malformed(
                f"unparsable JSON in a {event.event or 'unnamed'} event", event.data
            ) from None
        if not isinstance(payload, dict):
            raise self._malformed("event data is not a JSON object", event.data)
        kind = payload.get("type", event.event)
        if kind == "error" or event.event == "error":
            raise stream_error_failure(
                provider_id="anthropic", model=self._model, payload=payload, status=200
            )
        try:
            return self._dispatch(kind, payload)
        except (KeyError, TypeError, AttributeError, ValueError, RecursionError) as error:
            raise self._malformed(
                f"{kind} event has an unexpected shape ({type(error).__name__})", event.data
            ) from None

    def _dispatch(self, kind: Any, payload: dict[str, Any]) -> list[WireItem]:
        if kind == "content_block_delta":
            return self._delta(payload)
        if not self._started and kind != "message_start":
            if kind in ("ping",):
                return [_PING]
            raise self._malformed(f"{kind} arrived before message_start", json.dumps(payload)[:512])
        if kind == "message_start":
            usage = payload["message"].get("usage") or {}
            self._input_tokens = int(usage.get("input_tokens") or 0)
            self._started = True
            return [_MESSAGE_START]
        if kind == "content_block_start":
            return self._start_block(int(payload["index"]), payload["content_block"])
        if kind == "content_block_stop":
            return self._stop_block(int(payload["index"]))
        if kind == "message_delta":
            self._stop_reason = payload["delta"].get("stop_reason") or self._stop_reason
            usage = payload.get("usage") or {}
            self._output_tokens = int(usage.get("output_tokens") or self._output_tokens)
            return [Usage(self._input_tokens, self._output_tokens)]
        if kind == "message_stop":
            self._terminal = True
            usage = Usage(self._input_tokens, self._output_tokens)
            return [TurnEnd(self._stop_reason or "end_turn", usage)]
        return []  # the API reserves the right to add event types; unknown ones are ignored

    def _start_block(self, index: int, block: dict[str, Any]) -> list[WireItem]:
        """A block opening. It may already carry content (a gateway that sends a text block's
        text, or a tool call's whole input, in its start event): that content is kept."""
        kind = block["type"]
        self._blocks[index] = {
            "type": kind,
            "id": block.get("id"),
            "name": block.get("name"),
            "json": [],
            "input": block.get("input"),
        }
        if kind == "text" and block.get("text"):
            return [TextDelta(str(block["text"]))]
        if kind == "thinking" and block.get("thinking"):
            return [ThinkingDelta(str(block["thinking"]))]
        return [_BLOCK]

    def _delta(self, payload: dict[str, Any]) -> list[WireItem]:
        if not self._started:
            raise self._malformed("content_block_delta arrived before message_start", "")
        delta = payload["delta"]
        kind = delta["type"]
        if kind == "text_delta":
            return [TextDelta(delta["text"])] if delta["text"] else []
        if kind == "thinking_delta":
            return [ThinkingDelta(delta["thinking"])] if delta["thinking"] else []
        if kind == "input_json_delta":
            block = self._blocks[int(payload["index"])]
            block["json"].append(str(delta["partial_json"]))
            return [_BLOCK]
        return [_BLOCK]  # signature_delta, citations_delta: not output on their own

    def _stop_block(self, index: int) -> list[WireItem]:
        block = self._blocks.pop(index)
        if block["type"] != "tool_use":
            return [_BLOCK]
        if block["json"]:
            arguments = json.loads("".join(block["json"]))
        else:  # no input deltas: the input the block started with (usually {})
            arguments = block["input"] if block["input"] is not None else {}
        if (
            not isinstance(arguments, dict)
            or not isinstance(block["id"], str)
            or not isinstance(block["name"], str)
        ):
            raise TypeError("tool_use block did not assemble into a call")
        return [ToolCall(block["id"], block["name"], arguments)]

    def finish(self) -> list[WireItem]:
        if not self._terminal:
            detail = (
                "stream ended without message_stop"
                if self._started
                else "stream ended before message_start"
            )
            raise wire_failure(
                provider_id="anthropic",
                model=self._model,
                kind=Kind.TRUNCATED,
                phase=Phase.STREAM,
                detail=detail,
            )
        return []

    def _malformed(self, detail: str, data: str) -> ProviderFailure:
        return wire_failure(
            provider_id="anthropic",
            model=self._model,
            kind=Kind.MALFORMED,
            phase=Phase.PROTOCOL,
            detail=detail,
            excerpt=f"{detail}: {data[:1024]}",
        )


_SDK_ERRORS = SdkErrors(
    status=anthropic.APIStatusError,
    timeout=anthropic.APITimeoutError,
    connection=anthropic.APIConnectionError,
)


class AnthropicAdapter:
    provider_id = "anthropic"

    def __init__(
        self, target: TargetConfig, *, timeouts: StreamTimeouts, resolve: Resolver | None = None
    ) -> None:
        self._target = target
        self._client = sdk_client(
            anthropic.Anthropic, target=target, timeouts=timeouts, resolve=resolve
        )

    def open(self, call: ModelCall, *, on_bytes: ByteObserver, clock: Clock) -> SSEResponseStream:
        model = self._target.model or call.model
        return sse_open(
            create=lambda: self._client.messages.create(
                **anthropic_request(call, model=model), stream=True
            ),
            errors=_SDK_ERRORS,
            decoder=AnthropicDecoder(model=model),
            on_bytes=on_bytes,
            provider_id=self.provider_id,
            model=model,
            clock=clock,
        )

    def close(self) -> None:
        self._client.close()
