"""The mock ACP agent's requests that need a person: an edit carrying its diff, and a command.

``/edit NAME TEXT`` asks to replace NAME (in its working directory) with TEXT, sending the
proposed change as ACP's "diff" tool content (path, oldText, newText), and writes the file only
when an allow option was chosen, so a test can see a file change or stay untouched.
``/exec COMMAND`` asks to run COMMAND (kind execute, the command as the title) and never runs it:
the answer says what was decided. Either ends its turn "cancelled" when the request was answered
cancelled (a Stop while it was pending).
"""

from __future__ import annotations

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
from acp.schema import PermissionOption, PromptResponse, ToolCallLocation, ToolCallUpdate

OPTIONS = (
    PermissionOption(option_id="allow", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="allow-always", name="Allow always", kind="allow_always"),
    PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
)
_GRANTING = frozenset({"allow", "allow-always"})


async def _ask(conn: Any, session_id: str, tool_call: ToolCallUpdate) -> str | None:
    """The option chosen, or None when the request was answered cancelled."""
    answer = await conn.request_permission(
        session_id=session_id, tool_call=tool_call, options=list(OPTIONS)
    )
    outcome = answer.outcome
    return getattr(outcome, "option_id", None) if outcome.outcome == "selected" else None


async def _finish(conn: Any, session_id: str, tool_id: str, *, ran: bool, result: str) -> None:
    await conn.session_update(
        session_id=session_id,
        update=update_tool_call(
            tool_id,
            status="completed" if ran else "failed",
            content=[tool_content(text_block(result))],
        ),
    )


async def _say(conn: Any, session_id: str, text: str) -> PromptResponse:
    await conn.session_update(session_id=session_id, update=update_agent_message_text(text))
    return PromptResponse(stop_reason="end_turn")


async def edit_with_diff(conn: Any, session_id: str, *, cwd: str, rest: str) -> PromptResponse:
    name, _, new_text = rest.partition(" ")
    name = name or "notes.md"
    path = os.path.join(cwd, name)
    try:
        with open(path, encoding="utf-8") as handle:
            old_text: str | None = handle.read()
    except FileNotFoundError:
        old_text = None
    new_text = new_text + "\n"
    tool_id = "tool-edit-diff-1"
    title = f"Edit {name}"
    diff = tool_diff_content(path, new_text, old_text)
    where = [ToolCallLocation(path=path)]
    await conn.session_update(
        session_id=session_id,
        update=start_tool_call(
            tool_id,
            title,
            kind="edit",
            status="pending",
            locations=where,
            content=[diff],
            raw_input={"file_path": path, "new_string": new_text},
        ),
    )
    chosen = await _ask(
        conn,
        session_id,
        ToolCallUpdate(
            tool_call_id=tool_id,
            title=title,
            kind="edit",
            locations=where,
            content=[diff],
            raw_input={"file_path": path, "new_string": new_text},
        ),
    )
    if chosen is None:
        await _finish(conn, session_id, tool_id, ran=False, result="Cancelled.")
        return PromptResponse(stop_reason="cancelled")
    if chosen in _GRANTING:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(new_text)
        await _finish(conn, session_id, tool_id, ran=True, result=f"Wrote {name}.")
        return await _say(conn, session_id, f"I changed {name}.")
    await _finish(conn, session_id, tool_id, ran=False, result="Permission was refused.")
    return await _say(conn, session_id, f"I left {name} as it was.")


async def execute(conn: Any, session_id: str, *, command: str) -> PromptResponse:
    command = command or "make test"
    tool_id = "tool-execute-1"
    await conn.session_update(
        session_id=session_id,
        update=start_tool_call(
            tool_id, command, kind="execute", status="pending", raw_input={"command": command}
        ),
    )
    chosen = await _ask(
        conn,
        session_id,
        ToolCallUpdate(
            tool_call_id=tool_id, title=command, kind="execute", raw_input={"command": command}
        ),
    )
    if chosen is None:
        await _finish(conn, session_id, tool_id, ran=False, result="Cancelled.")
        return PromptResponse(stop_reason="cancelled")
    ran = chosen in _GRANTING
    result = "The command was allowed." if ran else "Permission was refused."
    await _finish(conn, session_id, tool_id, ran=ran, result=result)
    return await _say(conn, session_id, result)
