"""Run one prompt against an ACP agent process and report neutral events plus one outcome.

The agent is spawned in a process group of its own (``process.agent_process``: exactly the
environment given, the whole tree ended afterwards) and spoken to with the SDK's stdio client
(initialize, session/new, session/prompt).
Incoming ``session/update`` frames are converted by a raw-message observer, which the SDK calls
synchronously in wire order before it dispatches anything; so every event of a prompt reaches
``on_event`` before the prompt's own response is looked at, however the SDK schedules its
update handlers.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.connection import StreamDirection, StreamEvent
from acp.core import DEFAULT_STDIO_BUFFER_LIMIT_BYTES
from acp.schema import ClientCapabilities, Implementation, PermissionOption, ToolCallUpdate
from pydantic import ValidationError

from recovery.cancel import CancelToken
from recovery.clock import Clock, SystemClock
from recovery.providers.acp.agent_events import AgentEvent, ModelSettled, PromptEnd
from recovery.providers.acp.answering import permission_answer
from recovery.providers.acp.asking import PermissionAsker
from recovery.providers.acp.client import KandevClient
from recovery.providers.acp.convert import settled_model, update_events
from recovery.providers.acp.deadline import PausableDeadline
from recovery.providers.acp.egress import egress_bridges
from recovery.providers.acp.evidence import AttemptEvidence, evidence_observe, evidence_start
from recovery.providers.acp.failure import (
    PromptCompleted,
    PromptFailure,
    PromptOutcome,
    TerminalError,
    failure_build,
)
from recovery.providers.acp.metadata import allowed_identity
from recovery.providers.acp.process import StderrTail, agent_process
from recovery.providers.acp.redaction import OutputRedactor
from recovery.providers.acp.shaping import StreamShaper, is_cursor_agent
from recovery.providers.acp.spec import AcpPromptSpec, prompt_blocks, secret_env_values
from recovery.providers.acp.structured import model_call_unfinished
from recovery.taxonomy import Kind, Phase, Source

CLIENT_INFO = Implementation(name="kandev-web", version="1")
_EXIT_WAIT_S = 5.0
UNFINISHED_TURN = "the agent ended its turn, but no model call of it finished"


class _Stopped(Exception):
    def __init__(self, kind: Kind) -> None:
        super().__init__(kind)
        self.kind = kind


class AcpPromptRun:
    """One attempt of one prompt. ``await run.execute()`` once; events go to ``on_event``."""

    def __init__(
        self,
        *,
        spec: AcpPromptSpec,
        on_event: Callable[[AgentEvent], None],
        cancel: CancelToken | None = None,
        asker: PermissionAsker | None = None,
        clock: Clock | None = None,
    ) -> None:
        """``asker`` answers the requests the ASK policy puts to a person; without one they are
        refused as under read-only. ``clock`` measures the prompt timeout."""
        if not spec.command:
            raise ValueError("an ACP target needs a command line")
        self.spec = spec
        self._on_event = on_event
        self._cancel = cancel
        self._asker = asker
        self._clock: Clock = clock or SystemClock()
        self._stop = asyncio.Event()
        self._deadline = PausableDeadline(
            limit_s=spec.prompt_timeout_s, clock=self._clock, pause_budget_s=spec.ask_budget_s
        )
        self._evidence: AttemptEvidence = evidence_start(correlation=spec.correlation)
        self._shaper = StreamShaper(cursor_agent=False)
        self._redactor = OutputRedactor(known_values=secret_env_values(spec.env))
        self._acp_session_id: str | None = None
        self._prompting = False
        self._provider_id: str | None = None
        self._model_id: str | None = None
        self._stderr = StderrTail(limit_bytes=spec.stderr_tail_bytes)

    @property
    def evidence(self) -> AttemptEvidence:
        return self._evidence

    async def execute(self) -> PromptOutcome:
        loop = asyncio.get_running_loop()
        stop = self._stop
        unsubscribe = (
            self._cancel.on_cancel(lambda: loop.call_soon_threadsafe(stop.set))
            if self._cancel is not None
            else None
        )
        try:
            return await self._spawn_and_converse(stop)
        finally:
            if unsubscribe is not None:
                unsubscribe()

    # ---- the conversation -----------------------------------------------------------------

    async def _spawn_and_converse(self, stop: asyncio.Event) -> PromptOutcome:
        try:
            async with (
                egress_bridges(self.spec.egress),
                agent_process(
                    KandevClient(self._permission_answer),
                    self.spec.command,
                    env=self.spec.env,
                    cwd=self.spec.host_cwd or self.spec.cwd,
                    limit=DEFAULT_STDIO_BUFFER_LIMIT_BYTES,
                    observers=[self._observe],
                    exit_grace_s=self.spec.exit_grace_s,
                ) as (conn, process),
            ):
                drain = asyncio.create_task(self._stderr.drain(process.stderr))
                try:
                    return await self._converse(conn, process, stop, drain)
                finally:
                    if not drain.done():
                        drain.cancel()
        except OSError as error:
            return self._fail(
                TerminalError(
                    source=Source.EXIT,
                    message=f"the agent command could not be started ({type(error).__name__})",
                )
            )

    async def _converse(
        self, conn: Any, process: Any, stop: asyncio.Event, drain: Any
    ) -> PromptOutcome:
        spec = self.spec
        try:
            init = await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(),
                client_info=CLIENT_INFO,
            )
            agent_info = init.agent_info
            self._provider_id = allowed_identity(agent_info.name) if agent_info else None
            self._shaper = StreamShaper(cursor_agent=is_cursor_agent(self._provider_id))
            session = await conn.new_session(cwd=spec.cwd, mcp_servers=[])
            self._acp_session_id = session.session_id
            options = [
                option.model_dump(by_alias=True, mode="json")
                for option in session.config_options or []
            ]
            if model := settled_model(options):
                self._emit(ModelSettled(model_id=model))
            self._prompting = True
            response = await self._await_prompt(
                conn,
                process,
                conn.prompt(
                    session_id=session.session_id,
                    prompt=prompt_blocks(spec),
                ),
                stop,
            )
        except RequestError as error:
            self._emit_all(self._release_held())
            return self._fail(
                TerminalError(
                    source=Source.ACP_PROMPT,
                    message=str(error),
                    jsonrpc_code=error.code,
                    data=error.data,
                )
            )
        except _Stopped as stopped:
            self._emit_all(self._release_held())
            phase = Phase.CANCELLATION if stopped.kind is Kind.CANCELLED else None
            return self._fail(
                TerminalError(
                    source=Source.EXIT,
                    message=f"the agent did not stop within {spec.cancel_grace_s:g} s"
                    if stopped.kind is Kind.CANCELLED
                    else f"the prompt took longer than {spec.prompt_timeout_s:g} s",
                    kind=stopped.kind,
                    phase=phase,
                )
            )
        except (ConnectionError, asyncio.IncompleteReadError):
            self._emit_all(self._release_held())
            return await self._exit_failure(process, drain)
        except ValidationError:
            self._emit_all(self._release_held())
            return self._fail(
                TerminalError(
                    source=Source.ACP_PROMPT,
                    message="the agent sent a response that does not follow the protocol",
                    kind=Kind.MALFORMED,
                    phase=Phase.PROTOCOL,
                )
            )
        self._emit_all(self._flush_output())
        held = self._shaper.take_held()
        if held is not None:
            return self._fail(TerminalError(source=Source.ACP_CHUNK, message=held))
        if str(response.stop_reason) == "end_turn" and model_call_unfinished(response.field_meta):
            # Not an answer: whatever was shown stays, marked as a turn that did not finish.
            return self._fail(
                TerminalError(
                    source=Source.ACP_PROMPT,
                    message=UNFINISHED_TURN,
                    kind=Kind.TRUNCATED,
                    phase=Phase.STREAM,
                )
            )
        self._emit(PromptEnd(stop_reason=str(response.stop_reason)))
        return PromptCompleted(
            stop_reason=str(response.stop_reason),
            correlation=spec.correlation,
            evidence=self._evidence,
            model_id=self._model_id,
        )

    async def _await_prompt(self, conn: Any, process: Any, prompt: Any, stop: asyncio.Event) -> Any:
        task = asyncio.ensure_future(prompt)
        stopping = asyncio.ensure_future(stop.wait())
        deadline = self._deadline
        done: set[Any] = set()
        try:
            # The timeout is read again whenever a permission wait begins or ends: the time a
            # person takes to answer is not the agent's (deadline.py).
            while not done & {task, stopping} and not deadline.expired():
                deadline.changed.clear()
                changed = asyncio.ensure_future(deadline.changed.wait())
                try:
                    done, _ = await asyncio.wait(
                        {task, stopping, changed},
                        timeout=deadline.remaining(),
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                finally:
                    changed.cancel()
        finally:
            stopping.cancel()
        if task in done:
            return task.result()
        kind = Kind.CANCELLED if stop.is_set() else Kind.TIMEOUT
        with contextlib.suppress(Exception):
            await conn.cancel(session_id=self._acp_session_id)
        try:
            response = await asyncio.wait_for(asyncio.shield(task), self.spec.cancel_grace_s)
        except TimeoutError:
            # The agent ignored session/cancel: stop it, or it would hold the worker forever.
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            raise _Stopped(kind) from None
        if kind is Kind.TIMEOUT:
            raise _Stopped(kind)
        return response  # the agent honoured the cancel: stop_reason "cancelled"

    async def _exit_failure(self, process: Any, drain: Any) -> PromptFailure:
        try:
            status = await asyncio.wait_for(process.wait(), _EXIT_WAIT_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            status = await process.wait()
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(drain), 1.0)
        tail = self._stderr.text()
        ended = f"the agent exited with status {status}"
        return self._fail(
            TerminalError(source=Source.EXIT, message=f"{tail}\n{ended}" if tail else ended)
        )

    # ---- events ---------------------------------------------------------------------------

    def _observe(self, message: StreamEvent) -> None:
        if message.direction is not StreamDirection.INCOMING:
            return
        raw = message.message
        if raw.get("method") != "session/update":
            return
        params = raw.get("params")
        if not isinstance(params, dict) or params.get("sessionId") != self._acp_session_id:
            return  # another session's (or a previous session's) updates are not ours
        update = params.get("update")
        if not isinstance(update, dict):
            return
        converted = update_events(update, redact_chunks=False, agent=self._provider_id)
        for event in self._redactor.events(converted):
            if isinstance(event, ModelSettled):
                self._emit(event)
            elif self._prompting:
                self._emit_all(self._shaper.feed(event))

    def _flush_output(self) -> list[AgentEvent]:
        # Text the output redactor still holds (it might have been the start of a secret).
        shaped: list[AgentEvent] = []
        for event in self._redactor.flush():
            if self._prompting:
                shaped.extend(self._shaper.feed(event))
        return shaped

    def _release_held(self) -> list[AgentEvent]:
        return [*self._flush_output(), *self._shaper.release_held()]

    def _emit_all(self, events: list[AgentEvent]) -> None:
        for event in events:
            self._emit(event)

    def _emit(self, event: AgentEvent) -> None:
        if isinstance(event, ModelSettled):
            self._model_id = event.model_id
        self._evidence = evidence_observe(self._evidence, event, correlation=self.spec.correlation)
        self._on_event(event)

    def _fail(self, terminal: TerminalError) -> PromptFailure:
        return failure_build(
            terminal=terminal,
            attempt=self._evidence,
            correlation=self.spec.correlation,
            provider_id=self._provider_id,
            model_id=self._model_id,
        )

    # ---- permission requests (called by the SDK client, client.py) ------------------------

    async def _permission_answer(
        self, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> str | None:
        option_id, permission = await permission_answer(
            tool_call=tool_call,
            options=options,
            kind=tool_call.kind or self._shaper.tool_kinds.get(tool_call.tool_call_id),
            spec=self.spec,
            asker=self._asker,
            stop=self._stop,
            deadline=self._deadline,
        )
        self._emit_all(self._shaper.feed(permission))
        return option_id
