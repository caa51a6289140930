"""The built-in tool registry: one read-only tool and one side-effecting tool.

A tool must never run twice for one tool call. The runner checks for an existing result row
before running, and ``append_note`` is itself keyed by (session, tool_call_id) so even a run that
slipped past that check could not write a second note.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from recovery.model_call import ToolSpec
from sessions_app.models import Note, Session

NOTE_MAX_CHARS = 2000


class WallClock(Protocol):
    def now(self) -> float: ...


@dataclass(frozen=True, slots=True)
class ToolContext:
    session: Session
    tool_call_id: str
    clock: WallClock


@dataclass(frozen=True, slots=True)
class ToolOutput:
    content: str
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class Tool:
    spec: ToolSpec
    run: Callable[[ToolContext, Mapping[str, Any]], ToolOutput]
    side_effecting: bool
    kind: str  # the ACP tool kind it is shown as (read, edit, ...), like an agent's tools
    title: str  # what the page says it does


def _read_clock(context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutput:
    moment = dt.datetime.fromtimestamp(context.clock.now(), tz=dt.UTC)
    return ToolOutput(content=f"The current time is {moment.isoformat(timespec='seconds')}.")


def _append_note(context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutput:
    text = arguments.get("text")
    if not isinstance(text, str) or not text.strip():
        return ToolOutput(content="append_note needs a non-empty 'text' string.", is_error=True)
    if len(text) > NOTE_MAX_CHARS:
        return ToolOutput(
            content=f"Notes are limited to {NOTE_MAX_CHARS} characters.", is_error=True
        )
    note, created = Note.objects.get_or_create(
        session=context.session, tool_call_id=context.tool_call_id, defaults={"text": text}
    )
    return ToolOutput(
        content=f"Saved note #{note.pk}." if created else f"Note #{note.pk} was already saved."
    )


REGISTRY: dict[str, Tool] = {
    tool.spec.name: tool
    for tool in (
        Tool(
            spec=ToolSpec(
                name="read_clock",
                description="Read the current date and time (UTC).",
                input_schema={"type": "object", "properties": {}},
            ),
            run=_read_clock,
            side_effecting=False,
            kind="read",
            title="Read the clock",
        ),
        Tool(
            spec=ToolSpec(
                name="append_note",
                description="Save a short note to this session's notes.",
                input_schema={
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": "The note"}},
                    "required": ["text"],
                },
            ),
            run=_append_note,
            side_effecting=True,
            kind="edit",
            title="Save a note",
        ),
    )
}


def tool_specs() -> tuple[ToolSpec, ...]:
    return tuple(tool.spec for tool in REGISTRY.values())


def tool_display(*, name: str) -> tuple[str, str]:
    """The kind and title a call of ``name`` is shown with (an unknown tool: other, its name)."""
    tool = REGISTRY.get(name)
    return (tool.kind, tool.title) if tool else ("other", name)


def tool_run(*, name: str, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
    """Run a registered tool. Unknown tools and bad arguments come back as error results the model
    can read, never as exceptions that would end the run."""
    tool = REGISTRY.get(name)
    if tool is None:
        return ToolOutput(content=f"There is no tool named {name!r}.", is_error=True)
    if not isinstance(arguments, Mapping):
        return ToolOutput(content="Tool arguments must be a JSON object.", is_error=True)
    return tool.run(context, arguments)
