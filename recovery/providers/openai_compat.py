"""OpenAI Chat Completions (and compatible gateways) through the official SDK.

Tool-call arguments arrive split across chunks; a call is complete only when `finish_reason`
arrives, so no ToolCall escapes before that. A stream with neither `finish_reason` nor `[DONE]`
is truncated, never a finished turn.
"""

from __future__ import annotations

import json
from typing import Any

import openai

from recovery.clock import Clock
from recovery.model_call import ModelCall, TextPart, ToolResultPart, ToolUsePart
from recovery.providers.abortable_http import Resolver, sdk_client
from recovery.providers.base import ByteObserver, Metadata, StreamTimeouts, TargetConfig, WireItem
from recovery.providers.failures import stream_error_failure, wire_failure
from recovery.providers.httpwire import SdkErrors, SSEResponseStream, sse_open
from recovery.providers.sse import ServerSentEvent
from recovery.stream_events import TextDelta, ThinkingDelta, ToolCall, TurnEnd, Usage
from recovery.taxonomy import Kind, Phase, ProviderFailure

_CHUNK = Metadata("chunk")
_STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "content_filter",
}


def openai_request(call: ModelCall, *, model: str) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if call.system:
        messages.append({"role": "system", "content": call.system})
    for turn in call.turns:
        messages.extend(_messages(turn.role, turn.parts))
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": call.max_tokens,
        "messages": messages,
        "stream_options": {"include_usage": True},
    }
    if call.tools:
        params["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                },
            }
            for t in call.tools
        ]
    return params


def _messages(role: str, parts: tuple) -> list[dict[str, Any]]:
    texts = [p.text for p in parts if isinstance(p, TextPart)]
    if role == "assistant":
        text = "".join(texts)
        calls = [
            {
                "id": p.id,
                "type": "function",
                "function": {"name": p.name, "arguments": json.dumps(p.arguments)},
            }
            for p in parts
            if isinstance(p, ToolUsePart)
        ]
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = calls
        return [message]
    # Tool results must directly follow the assistant message that called them.
    out = [
        {"role": "tool", "tool_call_id": p.tool_call_id, "content": p.content}
        for p in parts
        if isinstance(p, ToolResultPart)
    ]
    # Two prompts in one user turn (the first was stopped before an answer) stay two paragraphs,
    # never run together into one word.
    if texts:
        out.append({"role": "user", "content": "\n\n".join(texts)})
    return out


class OpenAIDecoder:
    __slots__ = ("_done", "_finish_reason", "_model", "_provider_id", "_tools", "_usage")

    def __init__(self, *, model: str, provider_id: str = "openai") -> None:
        self._model = model
        self._provider_id = provider_id
        self._tools: dict[int, dict[str, Any]] = {}
        self._finish_reason: str | None = None
        self._usage = Usage()
        self._done = False

    def feed(self, event: ServerSentEvent) -> list[WireItem]:
        if self._done:
            return []
        data = event.data
        if data == "[DONE]":
            self._done = True
            return [self._turn_end()]
        try:
            payload = json.loads(data)
        except (ValueError, RecursionError):
            raise self._malformed("unparsable JSON in a chunk", data) from None
        if not isinstance(payload, dict):
            raise self._malformed("chunk is not a JSON object", data)
        if payload.get("error") is not None or event.event == "error":
            raise stream_error_failure(
                provider_id=self._provider_id, model=self._model, payload=payload, status=None
            )
        try:
            return self._chunk(payload)
        except (KeyError, TypeError, AttributeError, ValueError, RecursionError) as error:
            raise self._malformed(
                f"chunk has an unexpected shape ({type(error).__name__})", data
            ) from None

    def _chunk(self, payload: dict[str, Any]) -> list[WireItem]:
        items: list[WireItem] = []
        usage = payload.get("usage")
        if usage:
            self._usage = Usage(
                int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
            )
            items.append(self._usage)
        for choice in payload.get("choices") or ():
            if int(choice.get("index") or 0) != 0:
                continue  # we never ask for n > 1
            delta = choice.get("delta") or {}
            thought = delta.get("reasoning_content") or delta.get("reasoning")
            if thought:
                items.append(ThinkingDelta(str(thought)))
            content = delta.get("content")
            if content:
                items.append(TextDelta(str(content)))
            for call in delta.get("tool_calls") or ():
                self._accumulate(call)
            if choice.get("finish_reason") == "error":
                raise self._finished_in_error(payload, choice)
            if choice.get("finish_reason"):
                self._finish_reason = str(choice["finish_reason"])
                items.extend(self._complete_tool_calls())
        return items or [_CHUNK]

    def _accumulate(self, call: dict[str, Any]) -> None:
        slot = self._tools.setdefault(
            int(call.get("index") or 0), {"id": None, "name": "", "arguments": []}
        )
        if call.get("id"):
            slot["id"] = str(call["id"])
        function = call.get("function") or {}
        if function.get("name"):
            slot["name"] += str(function["name"])
        if function.get("arguments"):
            slot["arguments"].append(str(function["arguments"]))

    def _complete_tool_calls(self) -> list[WireItem]:
        calls: list[WireItem] = []
        for index in sorted(self._tools):
            slot = self._tools[index]
            arguments = json.loads("".join(slot["arguments"]) or "{}")
            if not isinstance(arguments, dict) or not slot["id"] or not slot["name"]:
                raise TypeError("tool call did not assemble")
            calls.append(ToolCall(slot["id"], slot["name"], arguments))
        self._tools.clear()
        return calls

    def _finished_in_error(
        self, payload: dict[str, Any], choice: dict[str, Any]
    ) -> ProviderFailure:
        """`finish_reason: "error"` (OpenRouter and other gateways): the generation failed, so the
        turn is a failure, never a finished answer. An error object beside it is the evidence."""
        error = choice.get("error")
        if isinstance(error, dict):
            return stream_error_failure(
                provider_id=self._provider_id,
                model=self._model,
                payload={"error": error},
                status=None,
            )
        return wire_failure(
            provider_id=self._provider_id,
            model=self._model,
            kind=Kind.TRUNCATED,
            phase=Phase.STREAM,
            detail='the provider ended the stream with finish_reason "error"',
            excerpt=json.dumps(payload)[:1024],
        )

    def _turn_end(self) -> TurnEnd:
        reason = self._finish_reason or "stop"
        return TurnEnd(_STOP_REASONS.get(reason, reason), self._usage)

    def finish(self) -> list[WireItem]:
        if self._done:
            return []
        if self._finish_reason is not None:
            # Some compatible gateways omit [DONE]; finish_reason already said the turn is whole.
            self._done = True
            return [self._turn_end()]
        raise wire_failure(
            provider_id=self._provider_id,
            model=self._model,
            kind=Kind.TRUNCATED,
            phase=Phase.STREAM,
            detail="stream ended without finish_reason or [DONE]",
        )

    def _malformed(self, detail: str, data: str) -> ProviderFailure:
        return wire_failure(
            provider_id=self._provider_id,
            model=self._model,
            kind=Kind.MALFORMED,
            phase=Phase.PROTOCOL,
            detail=detail,
            excerpt=f"{detail}: {data[:1024]}",
        )


_SDK_ERRORS = SdkErrors(
    status=openai.APIStatusError,
    timeout=openai.APITimeoutError,
    connection=openai.APIConnectionError,
)


class OpenAICompatAdapter:
    provider_id = "openai"

    def __init__(
        self, target: TargetConfig, *, timeouts: StreamTimeouts, resolve: Resolver | None = None
    ) -> None:
        self._target = target
        self._client = sdk_client(openai.OpenAI, target=target, timeouts=timeouts, resolve=resolve)
        # Read from OPENAI_ORG_ID / OPENAI_PROJECT_ID when not passed; a target names neither.
        self._client.organization = None
        self._client.project = None

    def open(self, call: ModelCall, *, on_bytes: ByteObserver, clock: Clock) -> SSEResponseStream:
        model = self._target.model or call.model
        return sse_open(
            create=lambda: self._client.chat.completions.create(
                **openai_request(call, model=model), stream=True
            ),
            errors=_SDK_ERRORS,
            decoder=OpenAIDecoder(model=model),
            on_bytes=on_bytes,
            provider_id=self.provider_id,
            model=model,
            clock=clock,
        )

    def close(self) -> None:
        self._client.close()
