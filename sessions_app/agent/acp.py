"""Run one claimed prompt generation against an ACP agent: the whole prompt is the retry unit.

One attempt is one fresh agent process (initialize, session/new, session/prompt) given the
person's latest prompt, preceded by the committed conversation so far (``acp_context``). Its
events become transcript rows through the same coalescing StreamWriter as a direct provider's:
message chunks -> an assistant row, thought chunks -> a thinking row, tool calls -> a tool_call
row revised in place as updates and permission decisions arrive.

A response-attempt boundary (the agent abandoned its answer and is regenerating it) deletes this
generation's assistant and thinking rows written since the last commit boundary (a tool call, or
the previous boundary) before any replacement is written, so viewers never see an answer twice.

A failed attempt is retried automatically only when the library proved it showed nothing
(``failure.replay.retry_allowed``); then the visible ladder owns the wait, the notice and the
scheduled retry, which runs the whole prompt again in a new agent process. Every other failure is
manual recovery at once, with no notice: the agent may have done something we can't undo.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Iterator, Mapping

from django.conf import settings

from recovery.clock import Clock
from recovery.django.ladder import attempt_committed, failure_handle
from recovery.providers.acp import (
    AcpPromptSpec,
    AgentEvent,
    AgentPermission,
    AgentText,
    AgentThought,
    AgentToolCall,
    AgentToolCallUpdate,
    Correlation,
    ModelSettled,
    PromptCompleted,
    PromptFailure,
    PromptOutcome,
    ReplayReason,
    ResponseAttemptBoundary,
    acp_prompt_iter,
)
from recovery.redact import redact_diagnostic
from recovery.taxonomy import ProviderFailure
from sessions_app.agent.acp_context import acp_prompt_text
from sessions_app.agent.coalescer import StreamWriter
from sessions_app.agent.outcome import (
    MESSAGE_LIMIT_BYTES,
    RunFailure,
    failure_outcome,
    ladder_outcome,
    unexpected_outcome,
)
from sessions_app.agent.targets import TargetUnusable, acp_config_for
from sessions_app.agent.watch import StopWatcher
from sessions_app.models import Message, PromptGeneration, ProviderTarget, Session
from sessions_app.selectors import target_fallback_names
from sessions_app.services import (
    generation_end,
    message_create,
    message_finish,
    message_retract,
    message_update,
)

logger = logging.getLogger(__name__)

# Leave the agent enough room to stop cleanly before Celery's own soft limit would interrupt us.
_TIMEOUT_MARGIN_S = 30
# Events that put something in front of the viewer: the first one of a retry retires the banner.
_VISIBLE = (AgentText, AgentThought, AgentToolCall, AgentToolCallUpdate, AgentPermission)
_TOOL_ROW_STATUS = {"completed": Message.Status.COMPLETE, "failed": Message.Status.ERROR}
# Why an automatic whole-prompt retry was refused, in the words the failure card uses.
_MANUAL_BECAUSE = {
    ReplayReason.TOOL_ACTIVITY: "The agent had already used a tool, so the prompt was not sent "
    "again automatically.",
    ReplayReason.OUTPUT_SEEN: "The agent had already started answering, so the prompt was not "
    "sent again automatically.",
    ReplayReason.DIAGNOSTIC_MISMATCH: "The agent reported a different problem before it failed, "
    "so the prompt was not sent again automatically.",
    ReplayReason.DIAGNOSTIC_TEXT_NOT_CONTAINED: "The agent reported a different problem before it "
    "failed, so the prompt was not sent again automatically.",
    ReplayReason.NOT_CURRENT: "The failure could not be tied to this prompt, so nothing was "
    "retried automatically.",
}
_NOT_TRANSIENT = "This failure is not known to be temporary, so nothing was retried automatically."


class AcpAgentRun:
    def __init__(
        self,
        *,
        generation: PromptGeneration,
        target: ProviderTarget,
        clock: Clock,
        rng: random.Random,
        attempt: int = 1,
        retrying: bool = False,
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        from recovery.guard import CancelToken

        self.generation = generation
        self.session = generation.session
        self.target = target
        self.clock = clock
        self.rng = rng
        self.environ = environ
        self.correlation = Correlation(
            session_id=str(self.session.pk),
            execution_id=f"gen-{generation.pk}-{attempt}",
            generation=generation.number,
        )
        self.turn_started_at = clock.now()
        self.banner_pending_retirement = retrying
        self.cancel = CancelToken()
        self.writer = StreamWriter(
            session=self.session,
            generation=generation,
            flush_interval_s=settings.KANDEV_STREAM_FLUSH_INTERVAL,
            clock=clock,
        )
        # Assistant and thinking rows a response-attempt boundary would take back.
        self.abandonable: list[int] = []
        self.tools: dict[str, Message] = {}
        self.model_id: str | None = None

    def execute(self, *, stop_poll_interval_s: float) -> None:
        try:
            spec = self._spec()
        except TargetUnusable as unusable:
            outcome = failure_outcome(failure=unusable, partial_output=False)
            self._end(PromptGeneration.State.FAILED, outcome)
            return
        with StopWatcher(
            generation_id=self.generation.pk,
            cancel=self.cancel,
            poll_interval_s=stop_poll_interval_s,
        ):
            try:
                outcome = self._consume(acp_prompt_iter(spec, cancel=self.cancel))
            except BaseException:
                logger.exception("generation %s crashed", self.generation.pk)
                self._seal(status=Message.Status.ERROR)
                self._end(PromptGeneration.State.FAILED, unexpected_outcome())
                raise
            self._settle(outcome)

    # ---- one attempt ----------------------------------------------------------------------

    def _spec(self) -> AcpPromptSpec:
        config = acp_config_for(self.target, session_id=self.session.pk, environ=self.environ)
        text = acp_prompt_text(messages=self._context_rows())
        if text is None or not text.prompt:
            raise TargetUnusable(code="no_prompt", detail="There is no prompt to send yet.")
        return AcpPromptSpec(
            command=config.command,
            cwd=config.cwd,
            # The person's own words, then what was really said before: retracted or partial
            # rows never reach the agent.
            prompt=text.prompt,
            context=text.context,
            correlation=self.correlation,
            env=config.env,
            permission_policy=config.permission_policy,
            prompt_timeout_s=max(1, settings.CELERY_TASK_SOFT_TIME_LIMIT - _TIMEOUT_MARGIN_S),
        )

    def _context_rows(self) -> list[Message]:
        # Read fresh: "Start fresh" may have moved context_from since this run was built.
        context_from = Session.objects.values_list("context_from_id", flat=True).get(
            pk=self.session.pk
        )
        rows = Message.objects.filter(
            session=self.session, role__in=(Message.Role.USER, Message.Role.ASSISTANT)
        )
        if context_from is not None:
            rows = rows.filter(id__gte=context_from)
        return list(rows.order_by("id"))

    def _consume(self, items: Iterator[AgentEvent | PromptOutcome]) -> PromptOutcome:
        for item in items:
            if isinstance(item, (PromptCompleted, PromptFailure)):
                return item
            self.apply(item)
        raise RuntimeError("the ACP prompt ended without an outcome")

    def apply(self, event: AgentEvent) -> None:
        """Put one agent event in front of the viewers (persisted first, pushed after commit)."""
        if self.banner_pending_retirement and isinstance(event, _VISIBLE):
            # The retried prompt reached the viewer: the banner goes before its first row shows.
            self.banner_pending_retirement = False
            attempt_committed(generation_id=self.generation.pk)
        if isinstance(event, AgentText):
            self._stream(role=Message.Role.ASSISTANT, text=event.text)
        elif isinstance(event, AgentThought):
            self._stream(role=Message.Role.THINKING, text=event.text)
        elif isinstance(event, AgentToolCall):
            self._tool_call(event)
        elif isinstance(event, AgentToolCallUpdate):
            self._tool_update(event)
        elif isinstance(event, AgentPermission):
            self._permission(event)
        elif isinstance(event, ResponseAttemptBoundary):
            self._retract_abandoned()
        elif isinstance(event, ModelSettled):
            self.model_id = event.model_id

    def _stream(self, *, role: str, text: str) -> None:
        self.writer.delta(role=role, text=text)
        row = self.writer.open_message
        if row is not None and row.pk not in self.abandonable:
            self.abandonable.append(row.pk)

    def _retract_abandoned(self) -> None:
        self.writer.close()
        ids, self.abandonable = self.abandonable, []
        if ids:  # a repeated boundary with nothing new in between takes nothing back
            message_retract(session=self.session, ids=ids)

    # ---- tool calls: one row each, revised in place ---------------------------------------

    def _commit_boundary(self) -> None:
        # Tool activity is committed: what came before it can no longer be taken back.
        self.writer.close()
        self.abandonable = []

    def _tool_call(self, event: AgentToolCall) -> None:
        self._commit_boundary()
        row = self.tools.get(event.id)
        if row is None:
            self._tool_row(
                tool_id=event.id, title=event.title, kind=event.kind, status=event.status
            )
            return
        metadata = {**row.metadata, "kind": event.kind, "status": event.status}
        message_update(
            message=row,
            text=event.title or row.text,
            status=_TOOL_ROW_STATUS.get(event.status, Message.Status.STREAMING),
            metadata=metadata,
        )

    def _tool_update(self, event: AgentToolCallUpdate) -> None:
        self._commit_boundary()
        row = self.tools.get(event.id) or self._tool_row(tool_id=event.id)
        status = event.status or row.metadata.get("status", "pending")
        metadata = {**row.metadata, "status": status}
        text = row.metadata.get("title") or row.text
        if event.content:
            metadata["output"] = event.content
            text = f"{text}\n{event.content}"
        message_update(
            message=row,
            text=text,
            status=_TOOL_ROW_STATUS.get(status, Message.Status.STREAMING),
            metadata=metadata,
        )

    def _permission(self, event: AgentPermission) -> None:
        self._commit_boundary()
        row = self.tools.get(event.tool_call_id) or self._tool_row(tool_id=event.tool_call_id)
        decision = {"granted": event.granted, "option_kind": event.option_kind}
        message_update(message=row, metadata={**row.metadata, "permission": decision})

    def _tool_row(
        self, *, tool_id: str, title: str = "", kind: str = "other", status: str = "pending"
    ) -> Message:
        title = title or f"Tool call {tool_id}"
        row = message_create(
            session=self.session,
            generation=self.generation,
            role=Message.Role.TOOL_CALL,
            text=title,
            status=_TOOL_ROW_STATUS.get(status, Message.Status.STREAMING),
            metadata={
                "tool_call_id": tool_id,
                "name": kind,
                "title": title,
                "kind": kind,
                "status": status,
                "source": "acp",
            },
        )
        self.tools[tool_id] = row
        return row

    def _seal(self, *, status: str = Message.Status.COMPLETE, incomplete: bool = True) -> None:
        """Close what is still open. Tool rows that never finished are kept, marked incomplete."""
        self.writer.close(status=status, incomplete=incomplete)
        for row in self.tools.values():
            if row.status == Message.Status.STREAMING:
                message_finish(message=row, status=status, incomplete=True)

    # ---- how the generation ends ----------------------------------------------------------

    def _settle(self, outcome: PromptOutcome) -> None:
        if self.cancel.cancelled or (
            isinstance(outcome, PromptCompleted) and outcome.stop_reason == "cancelled"
        ):
            self._seal()
            generation_end(generation=self.generation, state=PromptGeneration.State.STOPPED)
        elif isinstance(outcome, PromptCompleted):
            self._seal(incomplete=False)
            generation_end(generation=self.generation, state=PromptGeneration.State.SUCCEEDED)
        else:
            self._end_failed(outcome)

    def _end_failed(self, failure: PromptFailure) -> None:
        """The one place a failed ACP prompt meets the recovery ladder."""
        partial = self.writer.open_message is not None or bool(self.tools)
        if not failure.replay.retry_allowed:
            self._seal(status=Message.Status.ERROR)
            self._end(PromptGeneration.State.FAILED, manual_outcome(failure, partial=partial))
            return
        provider_failure = ProviderFailure(failure.evidence, failure.message)
        handled = failure_handle(
            generation=self.generation,
            failure=provider_failure,
            target_name=self.target.name,
            provider=self.target.name,
            model=failure.metadata.model_id or self.model_id or self.target.model,
            fallbacks=target_fallback_names(target=self.session.target),
            turn_started_at=self.turn_started_at,
            clock=self.clock,
            rng=self.rng,
        )
        if handled.decision.is_automatic:
            # Only provider-diagnostic lines can be open here; they stay visible, marked as part
            # of an attempt that did not finish.
            self._seal()
            logger.info(
                "generation %s: %s, whole prompt %s scheduled",
                self.generation.pk,
                handled.decision.classification.code,
                handled.decision.action,
            )
            return
        self._seal(status=Message.Status.ERROR)
        outcome = ladder_outcome(decision=handled.decision, failure=provider_failure)
        self._end(PromptGeneration.State.FAILED, outcome)

    def _end(self, state: str, outcome: RunFailure) -> None:
        logger.info("generation %s failed: %s", self.generation.pk, outcome.code)
        generation_end(
            generation=self.generation,
            state=state,
            error_code=outcome.code,
            error_message=outcome.message,
        )


def manual_outcome(failure: PromptFailure, *, partial: bool) -> RunFailure:
    """The card text for a failed prompt that will not be retried automatically."""
    parts: list[str] = [f"{failure.classification.reason}."]
    parts.append(_MANUAL_BECAUSE.get(failure.replay.reason, _NOT_TRANSIENT))
    if partial:
        parts.append("What the agent showed is kept and marked incomplete.")
    parts.append("Resume or start fresh when ready.")
    if failure.message:
        parts.append(f"Details: {failure.message}")
    return RunFailure(
        code=str(failure.classification.code),
        message=redact_diagnostic(" ".join(parts), limit_bytes=MESSAGE_LIMIT_BYTES),
    )
