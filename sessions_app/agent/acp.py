"""The ACP driver: one claimed prompt generation against an agent process; the whole prompt is
the retry unit.

One attempt is one fresh agent process (initialize, session/new, session/prompt) given the
person's latest prompt, preceded by the committed conversation so far (``acp_context``). Its
events become transcript rows through the same coalescing StreamWriter as a direct provider's:
message chunks -> an assistant row, thought chunks -> a thinking row, tool calls -> a tool_call
row revised in place as updates and permission decisions arrive.

A response-attempt boundary (the agent abandoned its answer and is regenerating it) deletes this
generation's assistant and thinking rows written since the last commit boundary (a tool call, or
the previous boundary) before any replacement is written, so viewers never see an answer twice.

A failed attempt goes to the turn's ladder with what it showed (``failure.replay_facts``); the
judge allows an automatic retry only when that proves the attempt showed nothing, and then the
visible ladder owns the wait, the notice and the scheduled retry, which runs the whole prompt
again in a new agent process. Every other failure is manual recovery at once, with no notice:
the agent may have done something we can't undo.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from django.conf import settings

from recovery import wording
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
    ResponseAttemptBoundary,
    acp_prompt_iter,
)
from sessions_app.agent.acp_context import acp_prompt_text
from sessions_app.agent.targets import TargetUnusable, acp_config_for
from sessions_app.agent.turn import HandedBack, Judged, Turn, TurnFailed, TurnResult
from sessions_app.db_connections import released_between
from sessions_app.models import Message, Session
from sessions_app.services import message_create, message_finish, message_retract, message_update
from sessions_app.services.ladder import call_succeeded

logger = logging.getLogger(__name__)

# Leave the agent enough room to stop cleanly before Celery's own soft limit would interrupt us.
_TIMEOUT_MARGIN_S = 30
# Events that put something in front of the viewer: the first one of a retry retires the banner.
_VISIBLE = (AgentText, AgentThought, AgentToolCall, AgentToolCallUpdate, AgentPermission)
_TOOL_ROW_STATUS = {"completed": Message.Status.COMPLETE, "failed": Message.Status.ERROR}


class AcpDriver:
    def __init__(self, turn: Turn) -> None:
        self.turn = turn
        self.session = turn.session
        self.generation = turn.generation
        self.writer = turn.writer
        self.correlation = Correlation(
            session_id=str(self.session.pk),
            execution_id=f"gen-{self.generation.pk}-{turn.attempt}",
            generation=self.generation.number,
        )
        # Assistant and thinking rows a response-attempt boundary would take back.
        self.abandonable: list[int] = []
        self.tools: dict[str, Message] = {}
        self.model_id: str | None = None

    @property
    def showed_output(self) -> bool:
        return self.writer.open_message is not None or bool(self.tools)

    def run(self, turn: Turn) -> TurnResult:
        try:
            spec = self._spec()
        except TargetUnusable as unusable:
            raise TurnFailed(HandedBack(code=unusable.code, detail=unusable.detail)) from None
        # The thread's connection goes back to the pool while it waits for the agent.
        outcome = self._consume(released_between(acp_prompt_iter(spec, cancel=turn.cancel)))
        if turn.cancel.cancelled or (
            isinstance(outcome, PromptCompleted) and outcome.stop_reason == "cancelled"
        ):
            return TurnResult.STOPPED
        if isinstance(outcome, PromptCompleted):
            # The whole prompt is this agent's one provider call: record it like a model call.
            call_succeeded(
                generation=self.generation,
                target_name=turn.target.name,
                clock=turn.clock,
                rng=turn.rng,
            )
            return TurnResult.SUCCEEDED
        raise TurnFailed(self._failure(outcome))

    def _failure(self, failure: PromptFailure) -> Judged:
        return Judged(
            evidence=failure.evidence,
            detail=failure.message,
            model=failure.metadata.model_id or self.model_id or self.turn.target.model,
            replay=failure.replay_facts,
        )

    # ---- one attempt ----------------------------------------------------------------------

    def _spec(self) -> AcpPromptSpec:
        config = acp_config_for(self.turn.target, session_id=self.session.pk)
        text = acp_prompt_text(messages=self._context_rows())
        if text is None or not text.prompt:
            raise TargetUnusable(code="no_prompt", detail=wording.NO_PROMPT)
        return AcpPromptSpec(
            **config.launch_fields(),
            # The person's own words, then what was really said before: retracted or partial
            # rows never reach the agent.
            prompt=text.prompt,
            context=text.context,
            correlation=self.correlation,
            prompt_timeout_s=max(1, settings.CELERY_TASK_SOFT_TIME_LIMIT - _TIMEOUT_MARGIN_S),
            exit_grace_s=settings.KANDEV_AGENT_EXIT_GRACE_S,
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
        # A provider diagnostic the agent prints (marked where it was converted) is visible but
        # is not the provider recovering: a retried attempt that prints it again keeps the banner
        # (requirements AC .21, .25), and its failure then updates that same notice.
        if isinstance(event, _VISIBLE) and not getattr(event, "diagnostic", False):
            self.turn.shown()
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

    def seal(self, *, status: str, incomplete: bool) -> None:
        """Close what is still open. Tool rows that never finished are kept, marked incomplete."""
        self.writer.close(status=status, incomplete=incomplete)
        for row in self.tools.values():
            if row.status == Message.Status.STREAMING:
                message_finish(message=row, status=status, incomplete=True)
