"""A permission request put to a person: what they are shown, and how their answer is awaited.

Under the ASK policy the run builds a ``PermissionAsk`` from the agent's request and awaits the
injected ``PermissionAsker`` (the app's: it writes a pending approval and waits for a viewer's
decision). The asker returns the chosen option's id, or None for "cancelled"; the prompt's
timeout is paused meanwhile (``deadline.py``), since the time is the person's, not the agent's.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from acp.schema import FileEditToolCallContent, PermissionOption, ToolCallUpdate

from recovery.providers.acp.deadline import PausableDeadline

logger = logging.getLogger(__name__)

# Bounds on what one card carries: a request is shown, not archived.
RAW_INPUT_CHARS = 2_000
DIFF_TEXT_CHARS = 200_000
_COMMAND_KEYS = ("command", "cmd")


@dataclass(frozen=True, slots=True)
class AskOption:
    option_id: str
    name: str
    kind: str  # allow_once | allow_always | reject_once | reject_always


@dataclass(frozen=True, slots=True)
class AskDiff:
    path: str
    old_text: str | None  # None: a new file
    new_text: str


@dataclass(frozen=True, slots=True)
class PermissionAsk:
    tool_call_id: str
    kind: str | None
    title: str
    paths: tuple[str, ...]
    command: str | None
    raw_input: str  # the tool's input as JSON, cut to RAW_INPUT_CHARS
    diff: AskDiff | None
    options: tuple[AskOption, ...]


# The person's answer: an offered option's id, or None (cancelled, or nobody answered).
PermissionAsker = Callable[[PermissionAsk], Awaitable[str | None]]


def _command_of(tool_call: ToolCallUpdate, kind: str | None) -> str | None:
    raw = tool_call.raw_input
    if isinstance(raw, dict):
        for key in _COMMAND_KEYS:
            value = raw.get(key)
            if isinstance(value, str) and value:
                return value
            if isinstance(value, list) and all(isinstance(part, str) for part in value):
                return " ".join(value)
    # An agent that puts the command only in the title (ours, Gemini CLI's shell tool).
    return (tool_call.title or None) if kind == "execute" else None


def _diff_of(tool_call: ToolCallUpdate) -> AskDiff | None:
    for item in tool_call.content or ():
        if isinstance(item, FileEditToolCallContent):
            return AskDiff(
                path=item.path,
                old_text=item.old_text[:DIFF_TEXT_CHARS] if item.old_text is not None else None,
                new_text=item.new_text[:DIFF_TEXT_CHARS],
            )
    return None


def _raw_summary(raw: Any) -> str:
    if raw is None:
        return ""
    try:
        text = json.dumps(raw, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(raw)
    return text[:RAW_INPUT_CHARS]


def ask_from(
    *,
    tool_call: ToolCallUpdate,
    options: Sequence[PermissionOption],
    kind: str | None,
    paths: tuple[str, ...],
) -> PermissionAsk:
    return PermissionAsk(
        tool_call_id=tool_call.tool_call_id,
        kind=kind,
        title=tool_call.title or "",
        paths=paths,
        command=_command_of(tool_call, kind),
        raw_input=_raw_summary(tool_call.raw_input),
        diff=_diff_of(tool_call),
        options=tuple(
            AskOption(option_id=option.option_id, name=option.name, kind=str(option.kind))
            for option in options
        ),
    )


async def ask_await(
    *, answer: Awaitable[str | None], stop: asyncio.Event, deadline: PausableDeadline
) -> str | None:
    """The person's answer, the prompt's timeout paused meanwhile. None when Stop comes first:
    the asker is cancelled (it records its approval as cancelled itself) and the agent is told
    "cancelled", as ACP asks of a client whose prompt is being cancelled."""
    asking = asyncio.ensure_future(answer)
    stopping = asyncio.ensure_future(stop.wait())
    deadline.pause()
    try:
        done, _ = await asyncio.wait({asking, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        deadline.resume()
    if asking not in done:
        asking.cancel()
    try:
        result = await asking
    except asyncio.CancelledError:
        if not asking.cancelled():
            raise
        return None
    except Exception:
        # Nobody can answer (say, the database went away): the tool must not run, and the agent
        # is told "cancelled" rather than left with a protocol error it may retry.
        logger.exception("asking a person failed; the request is answered cancelled")
        return None
    return result if isinstance(result, str) else None
