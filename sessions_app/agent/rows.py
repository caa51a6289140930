"""The turn's transcript rows: what each driver report becomes in front of the viewers.

The Turn owns one ``TurnRows`` and hands it every report a driver yields; nothing else of a turn
writes transcript rows. Text and thinking stream through the coalescing ``StreamWriter``; a
direct model's tool call and its tool's result are one row each; an agent's tool call is one row
revised in place as its updates and permission decisions arrive.

A response-attempt boundary (the agent abandoned its answer and is regenerating it) deletes this
generation's assistant and thinking rows written since the last commit boundary (a tool call, or
the previous boundary) before any replacement is written, so viewers never see an answer twice.
A direct model never sends one: its retry unit is a whole call, retried only when nothing showed.
"""

from __future__ import annotations

import json
from typing import Any

from recovery.providers.acp.agent_events import (
    AgentPermission,
    AgentText,
    AgentThought,
    AgentToolCall,
    AgentToolCallUpdate,
    ResponseAttemptBoundary,
    ToolBlock,
    ToolLocation,
)
from recovery.redact import redact_credentials
from recovery.stream_events import TextDelta, ThinkingDelta, ToolCall
from sessions_app.agent.coalescer import StreamWriter
from sessions_app.agent.reports import Report, ToolRan
from sessions_app.agent.tool_rows import content_stored, locations_stored
from sessions_app.agent.tools import tool_display
from sessions_app.models import Message, PromptGeneration, Session
from sessions_app.services import message_create, message_finish, message_retract, message_update

_TOOL_ROW_STATUS = {"completed": Message.Status.COMPLETE, "failed": Message.Status.ERROR}


def report_shows(report: Report) -> bool:
    """Whether ``report`` puts something in front of the viewer that proves the provider is
    answering: on a retried attempt the first one retires the banner.

    A provider diagnostic an agent prints (marked where it was converted) is visible but is not
    the provider recovering: a retried attempt that prints it again keeps the banner, and its
    failure then updates that same notice. Usage and terminal events show nothing; the guard
    releases nothing before the first user-visible event."""
    if isinstance(report, (AgentText, AgentThought)):
        return not report.diagnostic
    return isinstance(
        report,
        (
            TextDelta,
            ThinkingDelta,
            ToolCall,
            ToolRan,
            AgentToolCall,
            AgentToolCallUpdate,
            AgentPermission,
        ),
    )


class TurnRows:
    def __init__(
        self, *, session: Session, generation: PromptGeneration, writer: StreamWriter
    ) -> None:
        self.session = session
        self.generation = generation
        self.writer = writer
        # Assistant and thinking rows a response-attempt boundary would take back.
        self.abandonable: list[int] = []
        # An agent's tool rows by its tool call id.
        self.tools: dict[str, Message] = {}

    @property
    def showed_output(self) -> bool:
        """Whether anything of this attempt is still open on screen (for the card's wording)."""
        return self.writer.open_message is not None or bool(self.tools)

    def apply(self, report: Report) -> None:
        """Put one report in front of the viewers (persisted first, pushed after commit).
        Reports that show nothing (usage, terminal events, a settled model) change nothing."""
        if isinstance(report, (TextDelta, AgentText)):
            self._stream(role=Message.Role.ASSISTANT, text=report.text)
        elif isinstance(report, (ThinkingDelta, AgentThought)):
            self._stream(role=Message.Role.THINKING, text=report.text)
        elif isinstance(report, ToolCall):
            self.writer.close()
            self._model_tool_call(report)
        elif isinstance(report, ToolRan):
            self._model_tool_result(report)
        elif isinstance(report, AgentToolCall):
            self._agent_tool_call(report)
        elif isinstance(report, AgentToolCallUpdate):
            self._agent_tool_update(report)
        elif isinstance(report, AgentPermission):
            self._agent_permission(report)
        elif isinstance(report, ResponseAttemptBoundary):
            self._retract_abandoned()

    def call_ended(self) -> None:
        """A provider call reached its end: the next call's text starts a row of its own."""
        self.writer.close()

    def seal(self, *, status: str, incomplete: bool) -> None:
        """Close what is still open. Tool rows that never finished are kept, marked incomplete."""
        self.writer.close(status=status, incomplete=incomplete)
        for row in self.tools.values():
            if row.status == Message.Status.STREAMING:
                message_finish(message=row, status=status, incomplete=True)

    # ---- streamed text --------------------------------------------------------------------

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

    # ---- a direct model's tool calls: the call and its result, one row each ---------------

    def _model_tool_call(self, call: ToolCall) -> None:
        if Message.objects.filter(
            session=self.session, role=Message.Role.TOOL_CALL, metadata__tool_call_id=call.id
        ).exists():
            return
        arguments = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
        kind, title = tool_display(name=call.name)
        message_create(
            session=self.session,
            generation=self.generation,
            role=Message.Role.TOOL_CALL,
            text=redact_credentials(f"{call.name} {arguments}"),
            metadata={
                "tool_call_id": call.id,
                "name": call.name,
                "arguments": call.arguments,
                "kind": kind,
                "title": title,
                "status": "in_progress",
            },
        )

    def _model_tool_result(self, ran: ToolRan) -> None:
        call_row = Message.objects.filter(
            session=self.session, role=Message.Role.TOOL_CALL, metadata__tool_call_id=ran.call.id
        ).first()
        if call_row is not None:  # its status pill turns to done or failed for every viewer
            status = "failed" if ran.is_error else "completed"
            message_update(message=call_row, metadata={**call_row.metadata, "status": status})
        message_create(
            session=self.session,
            generation=self.generation,
            role=Message.Role.TOOL_RESULT,
            text=ran.content,
            metadata={"tool_call_id": ran.call.id, "name": ran.call.name, "is_error": ran.is_error},
        )

    # ---- an agent's tool calls: one row each, revised in place ----------------------------

    def _commit_boundary(self) -> None:
        # Tool activity is committed: what came before it can no longer be taken back.
        self.writer.close()
        self.abandonable = []

    def _agent_tool_call(self, event: AgentToolCall) -> None:
        self._commit_boundary()
        row = self.tools.get(event.id)
        if row is None:
            self._agent_tool_row(
                tool_id=event.id,
                title=event.title,
                kind=event.kind,
                status=event.status,
                shown=_tool_shown(blocks=event.blocks, locations=event.locations),
            )
            return
        # A repeated tool_call carries the whole call again: its content and files replace.
        metadata = {
            **row.metadata,
            "kind": event.kind,
            "status": event.status,
            **_tool_shown(blocks=event.blocks, locations=event.locations),
        }
        message_update(
            message=row,
            text=event.title or row.text,
            status=_TOOL_ROW_STATUS.get(event.status, Message.Status.STREAMING),
            metadata=metadata,
        )

    def _agent_tool_update(self, event: AgentToolCallUpdate) -> None:
        self._commit_boundary()
        row = self.tools.get(event.id) or self._agent_tool_row(tool_id=event.id)
        status = event.status or row.metadata.get("status", "pending")
        metadata = {**row.metadata, "status": status}
        if event.title:
            metadata["title"] = event.title
        if event.kind:
            metadata["kind"] = metadata["name"] = event.kind
        # ACP: content and locations an update names replace the call's; absent ones stay.
        metadata.update(_tool_shown(blocks=event.blocks, locations=event.locations))
        text = metadata.get("title") or row.text
        if event.content:
            metadata["output"] = event.content
            text = f"{text}\n{event.content}"
        elif event.blocks is None and row.metadata.get("output"):
            text = f"{text}\n{row.metadata['output']}"
        message_update(
            message=row,
            text=text,
            status=_TOOL_ROW_STATUS.get(status, Message.Status.STREAMING),
            metadata=metadata,
        )

    def _agent_permission(self, event: AgentPermission) -> None:
        self._commit_boundary()
        row = self.tools.get(event.tool_call_id) or self._agent_tool_row(tool_id=event.tool_call_id)
        decision = {"granted": event.granted, "option_kind": event.option_kind}
        message_update(message=row, metadata={**row.metadata, "permission": decision})

    def _agent_tool_row(
        self,
        *,
        tool_id: str,
        title: str = "",
        kind: str = "other",
        status: str = "pending",
        shown: dict[str, Any] | None = None,
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
                **(shown or {}),
            },
        )
        self.tools[tool_id] = row
        return row


def _tool_shown(
    *, blocks: tuple[ToolBlock, ...] | None, locations: tuple[ToolLocation, ...] | None
) -> dict[str, Any]:
    """The metadata keys a tool event replaces: its content, its files (None: left as they were)."""
    shown: dict[str, Any] = {}
    if blocks is not None:
        shown["content"] = content_stored(blocks)
    if locations is not None:
        shown["locations"] = locations_stored(locations)
    return shown
