"""The mock ACP agent's tool calls that carry content: a diff, terminal output, a failure.

They only show tool activity (no permission request, nothing written): the page's rendering of
kinds, statuses, files and content blocks is tested against what a real agent sends on the wire.

  /tool-diff PATH        an edit of PATH (in the working directory): a diff from the file's text
                         (none: a new file) to PATH.new's text when that file exists, else to the
                         text with one line added; in_progress, then completed
  /tool-terminal[:ms] [FILE]  an execute tool with coloured output (ANSI SGR codes; FILE's text
                         too, as `cat` would print it), running for ms (0 by default, honours
                         cancel), then completed with its whole output
  /tool-fail             an execute tool that fails: in_progress, then failed with its error
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from acp import (
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_tool_call,
)
from acp.schema import PromptResponse, ToolCallLocation

from recovery.mock.acp_scenarios import Command

COMMANDS = frozenset({"tool-diff", "tool-terminal", "tool-fail"})

TERMINAL_START = "\x1b[1m$ make test\x1b[0m\n\x1b[32mcollected 3 items\x1b[0m\n"
TERMINAL_END = (
    "tests/test_greet.py \x1b[32m.\x1b[0m\x1b[31mF\x1b[0m\x1b[32m.\x1b[0m\n"
    "\x1b[31;1mFAILED\x1b[0m tests/test_greet.py::test_name - AssertionError\n"
    "\x1b[33m1 failed\x1b[0m, \x1b[92m2 passed\x1b[0m in 0.12s\x1b]0;make test\x07\n"
)
FAILURE = "\x1b[31mbash: line 1: frobnicate: command not found\x1b[0m\n"
ADDED_LINE = "print('changed by the mock agent')\n"


async def tool_content_play(
    conn: Any, *, session_id: str, command: Command, cwd: str, cancelled: asyncio.Event
) -> PromptResponse:
    if command.name == "tool-diff":
        await _diff(conn, session_id, cwd, (command.rest.split() or ["notes.md"])[0])
    elif command.name == "tool-terminal":
        delay_s = int(command.arg) / 1000 if command.arg and command.arg.isdigit() else 0.0
        named = command.rest.split()[0] if command.rest.split() else ""
        if not await _terminal(conn, session_id, cwd, named, delay_s, cancelled):
            return PromptResponse(stop_reason="cancelled")
    else:
        await _fail(conn, session_id)
    await conn.session_update(session_id=session_id, update=update_agent_message_text("Done."))
    return PromptResponse(stop_reason="end_turn")


async def _diff(conn: Any, session_id: str, cwd: str, name: str) -> None:
    path = os.path.join(cwd, name)
    old = _read(path)
    new = _read(path + ".new")
    if new is None:
        new = (old or "") + ADDED_LINE
    diff = [tool_diff_content(path, new, old)]
    where = [ToolCallLocation(path=path, line=1)]
    tool_id = "tool-diff-1"
    await conn.session_update(
        session_id=session_id,
        update=start_tool_call(
            tool_id,
            f"Edit {name}",
            kind="edit",
            status="in_progress",
            locations=where,
            content=diff,
        ),
    )
    await conn.session_update(
        session_id=session_id, update=update_tool_call(tool_id, status="completed", content=diff)
    )


async def _terminal(
    conn: Any, session_id: str, cwd: str, named: str, delay_s: float, cancelled: asyncio.Event
) -> bool:
    tool_id = "tool-terminal-1"
    extra = _read(os.path.join(cwd, named)) if named else None
    title = f"cat {named}" if named else "make test"
    await conn.session_update(
        session_id=session_id,
        update=start_tool_call(
            tool_id,
            title,
            kind="execute",
            status="in_progress",
            content=[tool_content(text_block(TERMINAL_START))],
        ),
    )
    if delay_s:
        try:
            await asyncio.wait_for(cancelled.wait(), delay_s)
            return False
        except TimeoutError:
            pass
    output = TERMINAL_START + TERMINAL_END + (extra or "")
    await conn.session_update(
        session_id=session_id,
        update=update_tool_call(
            tool_id, status="completed", content=[tool_content(text_block(output))]
        ),
    )
    return True


async def _fail(conn: Any, session_id: str) -> None:
    tool_id = "tool-fail-1"
    await conn.session_update(
        session_id=session_id,
        update=start_tool_call(tool_id, "frobnicate --all", kind="execute", status="in_progress"),
    )
    await conn.session_update(
        session_id=session_id,
        update=update_tool_call(
            tool_id, status="failed", content=[tool_content(text_block(FAILURE))]
        ),
    )


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            return handle.read()
    except OSError:
        return None
