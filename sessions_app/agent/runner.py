"""Run one claimed prompt generation against a direct provider (ACP agents: agent/acp.py).

One run: claim -> (model call -> stream rows -> run the turn's tools) at most MAX_MODEL_CALLS
times -> end the generation as succeeded, stopped or failed. Tools run only after their turn
ended with the provider's terminal event, and at most once per tool call id.
"""

from __future__ import annotations

import enum
import json
import logging
import random
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from django.conf import settings

from recovery.clock import Clock, SystemClock
from recovery.django.ladder import attempt_committed, attempt_log, failure_handle
from recovery.events import (
    ModelCall,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    TurnEnd,
    Usage,
)
from recovery.providers.base import TargetConfig
from recovery.taxonomy import Evidence, Exposure, Kind, Phase, ProviderFailure, Source
from sessions_app.agent.acp import AcpAgentRun
from sessions_app.agent.coalescer import StreamWriter
from sessions_app.agent.outcome import failure_outcome, ladder_outcome, unexpected_outcome
from sessions_app.agent.targets import TargetUnusable, target_config_for
from sessions_app.agent.tools import ToolContext, tool_run, tool_specs
from sessions_app.agent.transcript import model_call_build
from sessions_app.agent.watch import StopWatcher
from sessions_app.models import Message, PromptGeneration, ProviderTarget
from sessions_app.selectors import target_fallback_names
from sessions_app.services import generation_claim, generation_end, message_create

logger = logging.getLogger(__name__)

MAX_MODEL_CALLS = 8
STOP_POLL_INTERVAL_S = 0.05

# open_stream(target_config, call, *, cancel, clock) -> iterable of StreamEvents
StreamOpener = Callable[..., Iterable[StreamEvent]]


class RunResult(enum.StrEnum):
    SUCCEEDED = "succeeded"
    STOPPED = "stopped"
    LOOP_LIMIT = "loop_limit"


def generation_run(
    *,
    generation_id: int,
    clock: Clock | None = None,
    open_stream: StreamOpener | None = None,
    rng: random.Random | None = None,
    stop_poll_interval_s: float = STOP_POLL_INTERVAL_S,
) -> PromptGeneration | None:
    """Claim and run a generation. A duplicate delivery returns None without touching anything."""
    generation = generation_claim(generation_id=generation_id)
    if generation is None:
        logger.info("generation %s already claimed; duplicate delivery ignored", generation_id)
        return None
    if generation.session.target.kind == ProviderTarget.Kind.ACP:
        AcpAgentRun(
            generation=generation,
            target=generation.session.target,
            clock=clock or SystemClock(),
            rng=rng or random.Random(),
        ).execute(stop_poll_interval_s=stop_poll_interval_s)
        return generation
    run = AgentRun(
        generation=generation,
        target=generation.session.target,
        clock=clock or SystemClock(),
        open_stream=open_stream or _default_open_stream(),
        rng=rng or random.Random(),
    )
    run.execute(stop_poll_interval_s=stop_poll_interval_s)
    return generation


def generation_retry(
    *,
    loop_id: int,
    attempt: int,
    clock: Clock | None = None,
    open_stream: StreamOpener | None = None,
    rng: random.Random | None = None,
    stop_poll_interval_s: float = STOP_POLL_INTERVAL_S,
) -> PromptGeneration | None:
    """Run one scheduled retry attempt. The claim re-checks the loop row first: an attempt that
    already ran, or a loop that was cancelled, stopped or disarmed meanwhile, does nothing."""
    from recovery.django.ladder import attempt_claim

    loop = attempt_claim(loop_id=loop_id, attempt=attempt)
    if loop is None:
        logger.info("retry attempt %s of loop %s is not due; ignored", attempt, loop_id)
        return None
    generation = PromptGeneration.objects.select_related("session", "session__target").get(
        pk=loop.generation_id
    )
    target = ProviderTarget.objects.filter(name=loop.target_name).first() or generation.session.target
    if target.kind == ProviderTarget.Kind.ACP:
        # The whole prompt again, in a new agent process: attempt n+1 of the turn.
        AcpAgentRun(
            generation=generation,
            target=target,
            clock=clock or SystemClock(),
            rng=rng or random.Random(),
            attempt=loop.attempt + 1,
            retrying=True,
        ).execute(stop_poll_interval_s=stop_poll_interval_s)
        return generation
    run = AgentRun(
        generation=generation,
        target=target,
        clock=clock or SystemClock(),
        open_stream=open_stream or _default_open_stream(),
        rng=rng or random.Random(),
        retrying=True,
    )
    run.execute(stop_poll_interval_s=stop_poll_interval_s)
    return generation


def _default_open_stream() -> StreamOpener:
    from recovery.guard import open_stream

    return open_stream


class AgentRun:
    def __init__(
        self,
        *,
        generation: PromptGeneration,
        target: ProviderTarget,
        clock: Clock,
        open_stream: StreamOpener,
        rng: random.Random,
        retrying: bool = False,
    ) -> None:
        from recovery.guard import CancelToken

        self.generation = generation
        self.session = generation.session
        self.target = target
        self.clock = clock
        self.open_stream = open_stream
        self.rng = rng
        self.last_stream: object | None = None
        self.config: TargetConfig | None = None
        # The retry budget's deadline counts from the start of the turn's first attempt.
        self.turn_started_at = clock.now()
        # A retry attempt retires the banner as soon as its call reaches the viewer.
        self.banner_pending_retirement = retrying
        self.cancel = CancelToken()
        self.writer = StreamWriter(
            session=self.session,
            generation=generation,
            flush_interval_s=settings.KANDEV_STREAM_FLUSH_INTERVAL,
            clock=clock,
        )
        self.produced_output = False

    def execute(self, *, stop_poll_interval_s: float) -> None:
        with StopWatcher(
            generation_id=self.generation.pk,
            cancel=self.cancel,
            poll_interval_s=stop_poll_interval_s,
        ):
            try:
                result = self._loop()
            except ProviderFailure as failure:
                if self.cancel.cancelled:
                    self._end_stopped()
                else:
                    self._end_failed(failure)
                return
            except BaseException:
                logger.exception("generation %s crashed", self.generation.pk)
                self.writer.close(status=Message.Status.ERROR, incomplete=True)
                outcome = unexpected_outcome()
                generation_end(
                    generation=self.generation,
                    state=PromptGeneration.State.FAILED,
                    error_code=outcome.code,
                    error_message=outcome.message,
                )
                raise
        if result is RunResult.SUCCEEDED:
            generation_end(generation=self.generation, state=PromptGeneration.State.SUCCEEDED)
        elif result is RunResult.STOPPED:
            self._end_stopped()
        else:
            generation_end(
                generation=self.generation,
                state=PromptGeneration.State.FAILED,
                error_code="tool_loop_limit",
                error_message=(
                    f"The agent used {MAX_MODEL_CALLS} model calls without finishing its answer, "
                    "so it was stopped to be safe."
                ),
            )

    def _loop(self) -> RunResult:
        config = self.config = target_config_for(self.target)
        for _ in range(MAX_MODEL_CALLS):
            if self.cancel.cancelled:
                return RunResult.STOPPED
            call = model_call_build(
                session_id=self.session.pk, model=config.model, tools=tool_specs()
            )
            tool_calls = self._stream_one_call(config, call)
            if tool_calls is None:
                return RunResult.STOPPED
            if not tool_calls:
                return RunResult.SUCCEEDED
            for tool_call in tool_calls:
                if self.cancel.cancelled:
                    return RunResult.STOPPED
                self._run_tool_once(tool_call)
        return RunResult.LOOP_LIMIT

    def _stream_one_call(self, config: Any, call: ModelCall) -> list[ToolCall] | None:
        """Stream one model call into rows. Returns its complete tool calls, or None if stopped."""
        # Kept for the attempt record: the guarded stream knows ttft, bytes and usage.
        self.last_stream = self.open_stream(config, call, cancel=self.cancel, clock=self.clock)
        events = iter(self.last_stream)
        try:
            tool_calls = self._consume(events)
            if tool_calls is not None:
                attempt_log(
                    generation=self.generation, target_name=self.target.name, stats=self.last_stream
                )
            return tool_calls
        finally:
            # Leaving early (Stop) must still close the provider response right away.
            close = getattr(events, "close", None)
            if close is not None:
                close()

    def _consume(self, events: Iterator[StreamEvent]) -> list[ToolCall] | None:
        tool_calls: list[ToolCall] = []
        turn_end: TurnEnd | None = None
        for event in events:
            if self.banner_pending_retirement and not isinstance(event, (Usage, TurnEnd)):
                # The guard releases nothing before the first user-visible event, so this is
                # the moment the provider recovered: the banner goes before the answer shows.
                self.banner_pending_retirement = False
                attempt_committed(generation_id=self.generation.pk)
            if isinstance(event, TextDelta):
                self.produced_output = True
                self.writer.delta(role=Message.Role.ASSISTANT, text=event.text)
            elif isinstance(event, ThinkingDelta):
                self.produced_output = True
                self.writer.delta(role=Message.Role.THINKING, text=event.text)
            elif isinstance(event, ToolCall):
                self.produced_output = True
                self.writer.close()
                self._record_tool_call(event)
                tool_calls.append(event)
            elif isinstance(event, TurnEnd):
                turn_end = event
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
                    exposure=Exposure.CONTENT if self.produced_output else Exposure.NONE,
                ),
                "the stream ended without its terminal event",
            )
        self.writer.close()
        return tool_calls

    def _record_tool_call(self, call: ToolCall) -> None:
        if Message.objects.filter(
            session=self.session, role=Message.Role.TOOL_CALL, metadata__tool_call_id=call.id
        ).exists():
            return
        message_create(
            session=self.session,
            generation=self.generation,
            role=Message.Role.TOOL_CALL,
            text=f"{call.name} {json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)}",
            metadata={"tool_call_id": call.id, "name": call.name, "arguments": call.arguments},
        )

    def _run_tool_once(self, call: ToolCall) -> None:
        if Message.objects.filter(
            session=self.session, role=Message.Role.TOOL_RESULT, metadata__tool_call_id=call.id
        ).exists():
            return
        output = tool_run(
            name=call.name,
            arguments=call.arguments,
            context=ToolContext(session=self.session, tool_call_id=call.id, clock=self.clock),
        )
        message_create(
            session=self.session,
            generation=self.generation,
            role=Message.Role.TOOL_RESULT,
            text=output.content,
            metadata={"tool_call_id": call.id, "name": call.name, "is_error": output.is_error},
        )

    def _end_stopped(self) -> None:
        self.writer.close(incomplete=True)
        generation_end(generation=self.generation, state=PromptGeneration.State.STOPPED)

    def _end_failed(self, failure: ProviderFailure) -> None:
        """The one place a failed provider call meets the recovery ladder."""
        partial = self.writer.open_message is not None
        if isinstance(failure, TargetUnusable):
            outcome = failure_outcome(failure=failure, partial_output=partial)
        else:
            handled = failure_handle(
                generation=self.generation,
                failure=failure,
                target_name=self.target.name,
                provider=self.target.name,
                # The model the request really named (a target may leave it to the default).
                model=self.config.model if self.config is not None else self.target.model,
                fallbacks=target_fallback_names(target=self.session.target),
                turn_started_at=self.turn_started_at,
                clock=self.clock,
                rng=self.rng,
                stats=self.last_stream,
            )
            if handled.decision.is_automatic:
                # Pre-exposure by construction: nothing of this call reached a viewer.
                self.writer.close()
                logger.info(
                    "generation %s: %s, %s scheduled",
                    self.generation.pk,
                    handled.decision.classification.code,
                    handled.decision.action,
                )
                return
            outcome = ladder_outcome(decision=handled.decision, failure=failure)
        self.writer.close(status=Message.Status.ERROR, incomplete=True)
        logger.info("generation %s failed: %s", self.generation.pk, outcome.code)
        generation_end(
            generation=self.generation,
            state=PromptGeneration.State.FAILED,
            error_code=outcome.code,
            error_message=outcome.message,
        )
