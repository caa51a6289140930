"""The direct-provider driver: our own agent loop against Anthropic / OpenAI-compatible wires.

One turn: (model call -> stream rows -> run the turn's tools) at most MAX_MODEL_CALLS times. Tools
run only after their call ended with the provider's terminal event, and at most once per tool call
id. The retry unit is the single failed model call, re-issued on unchanged history.

Every output path is redacted (credential tier, the worker's own key values included): text and
thinking as a stream in the StreamWriter, a tool call's arguments once the call is whole (the
tool runs with the redacted arguments, so a note never stores a key the model quoted), and a
tool's result before it is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from recovery import wording
from recovery.events import (
    ModelCall,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    TurnEnd,
    Usage,
)
from recovery.guard import open_stream as provider_open_stream
from recovery.judge import CallStats
from recovery.providers.base import TargetConfig
from recovery.redact import redact_credentials
from recovery.taxonomy import Evidence, Exposure, Kind, Phase, ProviderFailure, Source
from sessions_app.agent.targets import TargetUnusable, stream_timeouts_for, target_config_for
from sessions_app.agent.tools import ToolContext, tool_run, tool_specs
from sessions_app.agent.transcript import model_call_build
from sessions_app.agent.turn import HandedBack, Judged, Turn, TurnFailed, TurnResult
from sessions_app.db import released_between
from sessions_app.models import Message
from sessions_app.services import message_create
from sessions_app.services.ladder import call_succeeded
from sessions_app.text_rules import storable_text

MAX_MODEL_CALLS = 8

# open_stream(target_config, call, *, cancel, clock, timeouts) -> iterable of StreamEvents
StreamOpener = Callable[..., Iterable[StreamEvent]]


class DirectDriver:
    def __init__(self, turn: Turn, *, open_stream: StreamOpener | None = None) -> None:
        self.turn = turn
        self.open_stream = open_stream or provider_open_stream
        self.config: TargetConfig | None = None
        self.last_stream: object | None = None

    @property
    def showed_output(self) -> bool:
        return self.turn.writer.open_message is not None

    def seal(self, *, status: str, incomplete: bool) -> None:
        self.turn.writer.close(status=status, incomplete=incomplete)

    def run(self, turn: Turn) -> TurnResult:
        try:
            self.config = target_config_for(turn.target, session_id=turn.session.pk)
        except TargetUnusable as unusable:
            raise TurnFailed(HandedBack(code=unusable.code, detail=unusable.detail)) from None
        for number in range(MAX_MODEL_CALLS):
            if turn.cancel.cancelled:
                return TurnResult.STOPPED
            if number:
                # A call that continues after tools is a new request to the target: it waits on
                # the shared health too (Turn checked the first; CallHeld defers the turn).
                turn.admit_call(retry=False)
            call = model_call_build(
                session_id=turn.session.pk, model=self.config.model, tools=tool_specs()
            )
            try:
                tool_calls = self._stream_one_call(call)
            except ProviderFailure as failure:
                raise TurnFailed(self._judged(failure)) from None
            if tool_calls is None:
                return TurnResult.STOPPED
            if not tool_calls:
                return TurnResult.SUCCEEDED
            for tool_call in tool_calls:
                if turn.cancel.cancelled:
                    return TurnResult.STOPPED
                self._run_tool_once(tool_call)
        raise TurnFailed(
            HandedBack(code="tool_loop_limit", detail=wording.tool_loop_limit(MAX_MODEL_CALLS))
        )

    def _judged(self, failure: ProviderFailure) -> Judged:
        return Judged(
            evidence=failure.evidence,
            detail=failure.detail or failure.evidence.excerpt,
            # The model the request really named (a target may leave it to the default).
            model=self.config.model if self.config is not None else self.turn.target.model,
            stats=CallStats.of(self.last_stream),
        )

    def _stream_one_call(self, call: ModelCall) -> list[ToolCall] | None:
        """Stream one model call into rows. Returns its complete tool calls, or None if stopped."""
        turn = self.turn
        assert self.config is not None  # resolved by run() before its first model call
        # Kept for the attempt record: the guarded stream knows ttft, bytes and usage.
        self.last_stream = self.open_stream(
            self.config,
            call,
            cancel=turn.cancel,
            clock=turn.clock,
            timeouts=stream_timeouts_for(turn.target),
        )
        events = iter(self.last_stream)
        try:
            tool_calls = self._consume(events)
            if tool_calls is not None:
                call_succeeded(
                    generation=turn.generation,
                    target_name=turn.target.name,
                    clock=turn.clock,
                    rng=turn.rng,
                    stats=CallStats.of(self.last_stream),
                )
            return tool_calls
        finally:
            # Leaving early (Stop) must still close the provider response right away.
            close = getattr(events, "close", None)
            if close is not None:
                close()

    def _consume(self, events: Iterator[StreamEvent]) -> list[ToolCall] | None:
        turn = self.turn
        tool_calls: list[ToolCall] = []
        turn_end: TurnEnd | None = None
        produced_output = False
        # The thread's connection goes back to the pool while it waits for the provider.
        for event in released_between(events):
            if not isinstance(event, (Usage, TurnEnd)):
                # The guard releases nothing before the first user-visible event.
                turn.shown()
            if isinstance(event, TextDelta):
                produced_output = True
                turn.writer.delta(role=Message.Role.ASSISTANT, text=event.text)
            elif isinstance(event, ThinkingDelta):
                produced_output = True
                turn.writer.delta(role=Message.Role.THINKING, text=event.text)
            elif isinstance(event, ToolCall):
                produced_output = True
                turn.writer.close()
                self._record_tool_call(event)
                tool_calls.append(event)
            elif isinstance(event, TurnEnd):
                turn_end = event
            if turn.cancel.cancelled:
                return None
        if turn.cancel.cancelled:
            return None
        if turn_end is None:
            # The guard reports a missing terminal event itself; this keeps the loop honest if a
            # stream ever ends quietly anyway: an unterminated turn is never a success.
            raise ProviderFailure(
                Evidence(
                    source=Source.SSE,
                    phase=Phase.STREAM,
                    kind=Kind.TRUNCATED,
                    exposure=Exposure.CONTENT if produced_output else Exposure.NONE,
                ),
                "the stream ended without its terminal event",
            )
        turn.writer.close()
        return tool_calls

    def _record_tool_call(self, call: ToolCall) -> None:
        call = _redacted_call(call)
        session = self.turn.session
        if Message.objects.filter(
            session=session, role=Message.Role.TOOL_CALL, metadata__tool_call_id=call.id
        ).exists():
            return
        message_create(
            session=session,
            generation=self.turn.generation,
            role=Message.Role.TOOL_CALL,
            text=redact_credentials(
                f"{call.name} {json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)}"
            ),
            metadata={"tool_call_id": call.id, "name": call.name, "arguments": call.arguments},
        )

    def _run_tool_once(self, call: ToolCall) -> None:
        session = self.turn.session
        call = _redacted_call(call)
        if Message.objects.filter(
            session=session, role=Message.Role.TOOL_RESULT, metadata__tool_call_id=call.id
        ).exists():
            return
        output = tool_run(
            name=call.name,
            arguments=call.arguments,
            context=ToolContext(session=session, tool_call_id=call.id, clock=self.turn.clock),
        )
        message_create(
            session=session,
            generation=self.turn.generation,
            role=Message.Role.TOOL_RESULT,
            text=redact_credentials(output.content),
            metadata={"tool_call_id": call.id, "name": call.name, "is_error": output.is_error},
        )


def _redacted_call(call: ToolCall) -> ToolCall:
    """The call with every string in its arguments redacted (names stay: they are the schema),
    and every string storable: its id is looked up in jsonb, and a NUL in the arguments would
    reach a tool's own writes (append_note) as well as the transcript."""
    return ToolCall(
        storable_text(call.id), storable_text(call.name), _redacted_value(call.arguments)
    )


def _redacted_value(value: Any) -> Any:
    if isinstance(value, str):
        return storable_text(redact_credentials(value))
    if isinstance(value, dict):
        return {key: _redacted_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_redacted_value(item) for item in value]
    return value
