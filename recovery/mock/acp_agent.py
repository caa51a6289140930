"""A real ACP agent process for tests and demos: `python -m recovery.mock.acp_agent`.

Built on the SDK's agent side over stdio. Its behaviour is chosen by the prompt's marker or
leading command (see ``acp_scenarios``). Failing scenarios count prompts per working directory
(our worker gives each session its own) and prompt text in a state file
(``KANDEV_MOCK_ACP_STATE``), so "fail the first N" holds across relaunches of the agent and
starts over once it has played; with
``KANDEV_MOCK_ACP_RECORD`` set, every prompt received is appended to that file as a JSON line
(its final block: the person's prompt, without the leading context block).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any, cast

from acp import (
    PROTOCOL_VERSION,
    RequestError,
    run_agent,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
)
from acp.schema import (
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfoUpdate,
    ToolCallLocation,
    ToolCallUpdate,
    ToolKind,
)

from recovery.mock import acp_approvals
from recovery.mock import acp_scenarios as texts
from recovery.mock.acp_scenarios import Command, command_parse
from recovery.mock.acp_state import counter_forget, counter_next
from recovery.mock.acp_tool_content import COMMANDS as TOOL_CONTENT_COMMANDS
from recovery.mock.acp_tool_content import tool_content_play

RECORD_ENV = "KANDEV_MOCK_ACP_RECORD"
_FAILING = frozenset(
    {
        "overloaded",
        "transport-lost",
        "capacity",
        "diag-matched",
        "diag-mismatched",
        "diag-prose",
        "tool-then-fail",
        "output-then-fail",
        "write-then-fail",
    }
)


class MockAcpAgent:
    def __init__(self, *, identity: str, model: str, conversation: str = "") -> None:
        self._identity = identity
        self._model = model
        # Which conversation prompt counters belong to; without it, the working directory (a
        # sandboxed agent's is always /workspace, so its launcher names the session instead).
        self._conversation = conversation
        self._conn: Any = None
        self._sessions = 0
        self._cancelled: dict[str, asyncio.Event] = {}
        self._cwd: dict[str, str] = {}

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_info=Implementation(name=self._identity, version="1"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        self._sessions += 1
        session_id = f"mock-session-{os.getpid()}-{self._sessions}"
        self._cancelled[session_id] = asyncio.Event()
        self._cwd[session_id] = cwd
        options: list[SessionConfigOptionSelect | SessionConfigOptionBoolean] | None = None
        if self._model:
            options = [
                SessionConfigOptionSelect(
                    id="model",
                    name="Model",
                    category="model",
                    type="select",
                    current_value=self._model,
                    options=[SessionConfigSelectOption(value=self._model, name=self._model)],
                )
            ]
        return NewSessionResponse(session_id=session_id, config_options=options)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        if event := self._cancelled.get(session_id):
            event.set()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        # The final block is the person's prompt; any earlier blocks are the context we were
        # given about the conversation so far.
        texts_in = [getattr(block, "text", "") for block in prompt]
        text = texts_in[-1].strip() if texts_in else ""
        context = "\n\n".join(texts_in[:-1])
        _record(text)
        command = command_parse(text)
        self._cancelled.setdefault(session_id, asyncio.Event()).clear()
        if command.name in _FAILING and self._should_fail(
            command, f"{self._conversation or self._cwd.get(session_id)}\n{text}"
        ):
            await self._fail(session_id, command)
        if command.name == "recall":
            await self._say(session_id, texts.recall_answer(context))
            return PromptResponse(stop_reason="end_turn")
        return await self._answer(session_id, command)

    # ---- scenarios ------------------------------------------------------------------------

    def _should_fail(self, command: Command, key: str) -> bool:
        seen = counter_next(key=key)
        if command.count is None or seen < command.count:
            return True
        counter_forget(key=key)
        return False

    async def _fail(self, session_id: str, command: Command) -> None:
        name = command.name
        if name == "transport-lost":
            raise RequestError.internal_error({"error": texts.PEER_DISCONNECTED})
        if name == "capacity":
            raise RequestError(-32603, texts.CODEX_CAPACITY)
        if name == "diag-matched":
            await self._say(session_id, texts.CLAUDE_529_CHUNK)
        elif name == "diag-mismatched":
            await self._say(session_id, texts.CLAUDE_529_CHUNK)
            raise RequestError(-32603, texts.GATEWAY_500, texts.SERVER_ERROR_KIND)
        elif name == "diag-prose":
            await self._say(session_id, texts.CLAUDE_529_PROSE)
        elif name == "tool-then-fail":
            await self._tool(session_id, "read")
        elif name == "output-then-fail":
            await self._say(session_id, "Here is the first part of the answer.")
        elif name == "write-then-fail":
            self._write(session_id, (command.rest.split() or ["notes.md"])[0])
        raise RequestError(-32603, texts.CLAUDE_529, texts.SERVER_ERROR_KIND)

    async def _answer(self, session_id: str, command: Command) -> PromptResponse:
        name = command.name
        if name == "crash":
            # /crash:nul puts a NUL byte in the stderr tail the worker quotes on the card.
            nul = "\x00 " if command.arg == "nul" else ""
            sys.stderr.write(f"mock agent: simulated {nul}crash in the middle of a prompt\n")
            sys.stderr.flush()
            os._exit(3)
        if name == "hang":
            await asyncio.Event().wait()
        if name == "cursor":
            return await self._cursor(session_id, command.arg or "")
        if name == "response-retry":
            return await self._response_retry(session_id)
        if name == "tool":
            # "/tool:read /some/file": a read of that file rather than one of its own.
            named = (command.rest or "").split(maxsplit=1)
            path = named[0] if named and named[0].startswith("/") else None
            # An unknown kind is the prompt's mistake: ACP's model refuses it when it is sent.
            await self._tool(session_id, cast(ToolKind, command.arg or "read"), path)
        if name == "read-file":
            return await self._read_file(session_id, command.rest)
        if name in TOOL_CONTENT_COMMANDS:
            return await tool_content_play(
                self._conn,
                session_id=session_id,
                command=command,
                cwd=self._cwd.get(session_id, "."),
                cancelled=self._cancelled[session_id],
            )
        if name == "edit":
            cwd = self._cwd.get(session_id, ".")
            return await acp_approvals.edit_with_diff(
                self._conn, session_id, cwd=cwd, rest=command.rest
            )
        if name == "exec":
            return await acp_approvals.execute(self._conn, session_id, command=command.rest)
        delay_s = int(command.arg or 200) / 1000 if name == "slow" else 0.0
        return await self._plain(session_id, command.rest or "hello", delay_s=delay_s)

    async def _plain(self, session_id: str, question: str, *, delay_s: float) -> PromptResponse:
        await self._think(session_id, "Considering the request.")
        words = f"Mock agent reply to: {question}".split(" ")
        for number, word in enumerate(words):
            if delay_s and await self._cancelled_within(session_id, delay_s):
                return PromptResponse(stop_reason="cancelled")
            await self._say(session_id, word if number == 0 else f" {word}")
        return PromptResponse(stop_reason="end_turn")

    async def _cursor(self, session_id: str, variant: str) -> PromptResponse:
        if variant == "resumed":
            await self._say(session_id, texts.CURSOR_FRAMES["stalled"])
            await self._say(session_id, "Reconnected; here is the answer.")
        elif variant == "twice":
            await self._say(session_id, texts.CURSOR_FRAMES["ping"])
            await self._say(session_id, texts.CURSOR_FRAMES["stalled"])
        else:
            frame = texts.CURSOR_FRAMES.get(variant)
            if frame is None:
                raise RequestError.invalid_params({"variant": variant})
            await self._say(session_id, frame)
        return PromptResponse(stop_reason="end_turn")

    async def _response_retry(self, session_id: str) -> PromptResponse:
        await self._think(session_id, "Drafting a first attempt.")
        await self._say(session_id, "This draft will be abandoned.")
        marker = SessionInfoUpdate(
            session_update="session_info_update", field_meta={texts.RETRY_MARKER: True}
        )
        await self._conn.session_update(session_id=session_id, update=marker)
        await self._conn.session_update(session_id=session_id, update=marker)  # a no-op repeat
        await self._say(session_id, "This is the replacement answer.")
        return PromptResponse(stop_reason="end_turn")

    async def _tool(self, session_id: str, kind: ToolKind, path: str | None = None) -> None:
        tool_id = f"tool-{kind}-1"
        title = f"Mock {kind} tool"
        # Like a real agent's read, it names the file it wants: one in its working directory
        # unless the prompt names another.
        where = [ToolCallLocation(path=path or f"{self._cwd.get(session_id)}/notes.md")]
        await self._conn.session_update(
            session_id=session_id,
            update=start_tool_call(tool_id, title, kind=kind, status="pending", locations=where),
        )
        answer = await self._conn.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(tool_call_id=tool_id, title=title, kind=kind, locations=where),
            options=[
                PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ],
        )
        outcome = answer.outcome
        granted = outcome.outcome == "selected" and getattr(outcome, "option_id", "") == "allow"
        result = "The tool ran." if granted else "Permission was refused."
        await self._conn.session_update(
            session_id=session_id,
            update=update_tool_call(
                tool_id,
                status="completed" if granted else "failed",
                content=[tool_content(text_block(result))],
            ),
        )

    async def _read_file(self, session_id: str, name: str) -> PromptResponse:
        """Read a file of the working directory as a read tool (its bytes decoded as UTF-8, so NUL
        bytes stay NUL characters), then think and answer quoting what it held."""
        path = os.path.join(self._cwd.get(session_id, "."), name)
        tool_id = "tool-read-file-1"
        title = f"Read {name}"
        await self._conn.session_update(
            session_id=session_id,
            update=start_tool_call(tool_id, title, kind="read", status="pending"),
        )
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as handle:
                content = handle.read()
        except OSError as error:
            content = f"could not read {name}: {error.strerror}"
        await self._conn.session_update(
            session_id=session_id,
            update=update_tool_call(
                tool_id, status="completed", content=[tool_content(text_block(content))]
            ),
        )
        await self._think(session_id, f"The file holds: {content}")
        await self._say(session_id, f"The file says: {content}")
        return PromptResponse(stop_reason="end_turn")

    def _write(self, session_id: str, name: str) -> None:
        """Really change the working directory, silently: only a snapshot can tell."""
        path = os.path.join(self._cwd.get(session_id, "."), name)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(texts.WRITTEN_LINE)

    async def _say(self, session_id: str, text: str) -> None:
        await self._conn.session_update(
            session_id=session_id, update=update_agent_message_text(text)
        )

    async def _think(self, session_id: str, text: str) -> None:
        await self._conn.session_update(
            session_id=session_id, update=update_agent_thought_text(text)
        )

    async def _cancelled_within(self, session_id: str, delay_s: float) -> bool:
        try:
            await asyncio.wait_for(self._cancelled[session_id].wait(), delay_s)
        except TimeoutError:
            return False
        return True


def _record(text: str) -> None:
    # Tests prove what the agent received (the prompt as redacted by the adapter).
    if path := os.environ.get(RECORD_ENV):
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(text) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m recovery.mock.acp_agent", description=__doc__)
    parser.add_argument("--identity", default="kandev-mock-agent", help="agentInfo.name to report")
    parser.add_argument("--model", default="mock-sonnet", help="model to settle ('' for none)")
    parser.add_argument("--conversation", default="", help="whose prompt counters these are")
    options = parser.parse_args(argv)
    agent = MockAcpAgent(
        identity=options.identity, model=options.model, conversation=options.conversation
    )
    # It answers only what Kandev's client asks; acp answers any other method "not found", though
    # run_agent's hint names its whole Agent protocol.
    asyncio.run(run_agent(agent))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
