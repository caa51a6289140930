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
import shlex
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
_SHELLS = frozenset({"sh", "bash", "zsh", "dash"})
_SHELL_SCRIPT_FLAGS = frozenset({"-c", "-lc"})


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


def _argv_text(argv: list[str]) -> str:
    # A shell asked to run a script (Codex's ["/bin/sh", "-lc", CMD]): the script is the command
    # a person judges; any other argv is shown quoted as a shell would need it.
    if len(argv) == 3 and argv[1] in _SHELL_SCRIPT_FLAGS and argv[0].rsplit("/", 1)[-1] in _SHELLS:
        return argv[2]
    return shlex.join(argv)


def _command_of(tool_call: ToolCallUpdate, kind: str | None) -> str | None:
    raw = tool_call.raw_input
    if isinstance(raw, dict):
        for key in _COMMAND_KEYS:
            value = raw.get(key)
            if isinstance(value, str) and value:
                return value
            if isinstance(value, list) and value and all(isinstance(p, str) for p in value):
                return _argv_text(value)
    # An agent that puts the command only in the title (ours, Gemini CLI's shell tool).
    return (tool_call.title or None) if kind == "execute" else None


# What is in a file now, for a diff that does not say (None: not there, or not for us to read).
FileReader = Callable[[str], str | None]


def _diff_of(tool_call: ToolCallUpdate, read_current: FileReader | None) -> AskDiff | None:
    for item in tool_call.content or ():
        if isinstance(item, FileEditToolCallContent):
            old_text = item.old_text
            if not old_text:
                # Claude Code's Write and Codex's "*** Add File" over a file that is there carry
                # the new text alone, and Gemini CLI sends "" for a new file: what the file holds
                # now tells an overwrite from a new file.
                old_text = read_current(item.path) if read_current is not None else old_text
            return AskDiff(
                path=item.path,
                old_text=old_text[:DIFF_TEXT_CHARS] if old_text else None,
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
    read_current: FileReader | None = None,
) -> PermissionAsk:
    """The card's fields from the agent's request; ``read_current`` reads a file the proposed
    change names when the request does not say what it holds now."""
    return PermissionAsk(
        tool_call_id=tool_call.tool_call_id,
        kind=kind,
        title=tool_call.title or "",
        paths=paths,
        command=_command_of(tool_call, kind),
        raw_input=_raw_summary(tool_call.raw_input),
        diff=_diff_of(tool_call, read_current),
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
