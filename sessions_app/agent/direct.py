"""The direct-provider driver: our own agent loop against Anthropic / OpenAI-compatible wires.

One turn: (model call -> stream events -> run the turn's tools) at most MAX_MODEL_CALLS times.
Tools run only after their call ended with the provider's terminal event, and at most once per
tool call id. The retry unit is the single failed model call, re-issued on unchanged history.

The driver only reports (``sessions_app.agent.reports``): it yields each stream event, each tool
result, ``CallSucceeded`` for each call that ended and ``CallStarting`` before each call after
the first, and returns how the turn ended; the Turn writes the rows, asks the target's health
and tells the ladder. Because the Turn acts on each report before it resumes the driver, a tool
call's row is written before its tool runs, and the next call's history (read fresh from the
transcript) holds everything the previous call showed.

Every output it reports is redacted (credential tier, the worker's own key values included):
a tool call's arguments once the call is whole (the tool runs with the redacted arguments, so a
note never stores a key the model quoted) and a tool's result. Text and thinking are redacted as
a stream by the Turn's StreamWriter.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Any

from recovery import wording
from recovery.cancel import CancelToken
from recovery.clock import Clock
from recovery.guard import open_stream as provider_open_stream
from recovery.judge import CallStats
from recovery.model_call import ModelCall
from recovery.providers.base import TargetConfig
from recovery.redact import redact_credentials
from recovery.stream_events import StreamEvent, TextDelta, ThinkingDelta, ToolCall, TurnEnd
from recovery.taxonomy import Evidence, Exposure, Kind, Phase, ProviderFailure, Source
from sessions_app.agent.reports import (
    CallStarting,
    CallSucceeded,
    HandedBack,
    Judged,
    Report,
    Reports,
    ToolRan,
    TurnResult,
)
from sessions_app.agent.targets import TargetUnusable, stream_timeouts_for, target_config_for
from sessions_app.agent.tools import ToolContext, tool_run, tool_specs
from sessions_app.agent.transcript import model_call_build
from sessions_app.db_connections import released_between
from sessions_app.models import Message, ProviderTarget, Session
from sessions_app.text_rules import storable_text

MAX_MODEL_CALLS = 8

# open_stream(target_config, call, *, cancel, clock, timeouts) -> iterable of StreamEvents
StreamOpener = Callable[..., Iterable[StreamEvent]]


class DirectDriver:
    def __init__(
        self,
        *,
        target: ProviderTarget,
        session: Session,
        cancel: CancelToken,
        clock: Clock,
        open_stream: StreamOpener | None = None,
    ) -> None:
        self.target = target
        self.session = session
        self.cancel = cancel
        self.clock = clock
        self.open_stream = open_stream or provider_open_stream
        self.config: TargetConfig | None = None
        self.last_stream: object | None = None

    def reports(self) -> Reports:
        try:
            self.config = target_config_for(self.target, session_id=self.session.pk)
        except TargetUnusable as unusable:
            return HandedBack(code=unusable.code, detail=unusable.detail)
        for number in range(MAX_MODEL_CALLS):
            if self.cancel.cancelled:
                return TurnResult.STOPPED
            if number:
                # A call that continues after tools is a new request to the target: it waits on
                # the shared health too. Resumed only if admitted (the Turn closes us otherwise).
                yield CallStarting()
            call = model_call_build(
                session_id=self.session.pk, model=self.config.model, tools=tool_specs()
            )
            try:
                tool_calls = yield from self._one_call(call)
            except ProviderFailure as failure:
                return self._judged(failure)
            if tool_calls is None:
                return TurnResult.STOPPED
            if not tool_calls:
                return TurnResult.SUCCEEDED
            for tool_call in tool_calls:
                if self.cancel.cancelled:
                    return TurnResult.STOPPED
                yield from self._run_tool_once(tool_call)
        return HandedBack(code="tool_loop_limit", detail=wording.tool_loop_limit(MAX_MODEL_CALLS))

    def _judged(self, failure: ProviderFailure) -> Judged:
        return Judged(
            evidence=failure.evidence,
            detail=failure.detail or failure.evidence.excerpt,
            # The model the request really named (a target may leave it to the default).
            model=self.config.model if self.config is not None else self.target.model,
            stats=CallStats.of(self.last_stream),
        )

    def _one_call(self, call: ModelCall) -> Generator[Report, None, list[ToolCall] | None]:
        """Relay one model call's stream. Returns its complete tool calls, or None if stopped."""
        # Kept for the attempt record: the guarded stream knows ttft, bytes and usage.
        self.last_stream = self.open_stream(
            self.config,
            call,
            cancel=self.cancel,
            clock=self.clock,
            timeouts=stream_timeouts_for(self.target),
        )
        events = iter(self.last_stream)
        try:
            tool_calls = yield from self._relay(events)
            if tool_calls is not None:
                yield CallSucceeded(stats=CallStats.of(self.last_stream))
            return tool_calls
        finally:
            # Leaving early (Stop, a held call, a crash) still closes the provider response.
            close = getattr(events, "close", None)
            if close is not None:
                close()

    def _relay(
        self, events: Iterator[StreamEvent]
    ) -> Generator[Report, None, list[ToolCall] | None]:
        tool_calls: list[ToolCall] = []
        turn_end: TurnEnd | None = None
        produced_output = False
        # The thread's connection goes back to the pool while it waits for the provider.
        for event in released_between(events):
            if isinstance(event, ToolCall):
                event = _redacted_call(event)
                tool_calls.append(event)
            if isinstance(event, (TextDelta, ThinkingDelta, ToolCall)):
                produced_output = True
            elif isinstance(event, TurnEnd):
                turn_end = event
            yield event
            if self.cancel.cancelled:
                return None
        if self.cancel.cancelled:
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
        return tool_calls

    def _run_tool_once(self, call: ToolCall) -> Generator[Report, None, None]:
        if Message.objects.filter(
            session=self.session, role=Message.Role.TOOL_RESULT, metadata__tool_call_id=call.id
        ).exists():
            return
        output = tool_run(
            name=call.name,
            arguments=call.arguments,
            context=ToolContext(session=self.session, tool_call_id=call.id, clock=self.clock),
        )
        yield ToolRan(
            call=call, content=redact_credentials(output.content), is_error=output.is_error
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
