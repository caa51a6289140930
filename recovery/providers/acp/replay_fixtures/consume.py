"""How both layers read a replay fixture: event tokens, and the evidence layer's own replay.

The transport layer replays a fixture through a real ACP client connection (the fake agent in
``recovery.mock.acp_replay``); the evidence layer replays the same frames here, without I/O,
through the same conversion, shaping and evidence functions the adapter uses. Either layer's
failure is judged by the judge's own replay step (``recovery.judge.judge_replay``).
"""

from __future__ import annotations

from typing import Any

from recovery.judge import ReplayJudgement, judge_replay
from recovery.providers.acp.agent_events import (
    AgentEvent,
    AgentPermission,
    AgentText,
    AgentThought,
    AgentToolCall,
    AgentToolCallUpdate,
    Correlation,
    ModelSettled,
    PromptEnd,
    ResponseAttemptBoundary,
)
from recovery.providers.acp.convert import update_events
from recovery.providers.acp.evidence import evidence_observe, evidence_start
from recovery.providers.acp.failure import (
    PromptCompleted,
    PromptFailure,
    PromptOutcome,
    TerminalError,
    failure_build,
)
from recovery.providers.acp.replay_fixtures.loader import ReplayFixture
from recovery.providers.acp.shaping import StreamShaper, is_cursor_agent
from recovery.taxonomy import Source


def merged_text_runs(tokens: list[str]) -> list[str]:
    """Consecutive ``text`` (or ``thought``) tokens as one: a live run's output redactor releases a
    chunk's text in as many events as its safe cuts need, so only the order of kinds is stable."""
    merged: list[str] = []
    for token in tokens:
        if token in ("text", "thought") and merged and merged[-1] == token:
            continue
        merged.append(token)
    return merged


def event_token(event: AgentEvent) -> str:
    if isinstance(event, AgentText):
        return "diagnostic" if event.diagnostic else "text"
    if isinstance(event, AgentThought):
        return "diagnostic-thought" if event.diagnostic else "thought"
    if isinstance(event, PromptEnd):
        return f"end:{event.stop_reason}"
    names = {
        AgentToolCall: "tool_call",
        AgentToolCallUpdate: "tool_call_update",
        AgentPermission: "permission",
        ResponseAttemptBoundary: "boundary",
        ModelSettled: "model",
    }
    return names[type(event)]


def outcome_token(outcome: PromptOutcome) -> str:
    if isinstance(outcome, PromptFailure):
        return f"failure:{failure_judged(outcome).classification.code}"
    return f"completed:{outcome.stop_reason}"


def failure_judged(failure: PromptFailure) -> ReplayJudgement:
    return judge_replay(evidence=failure.evidence, replay=failure.replay_facts)


def fixture_correlation(fixture: ReplayFixture) -> Correlation:
    return Correlation(
        session_id=fixture.session_id,
        execution_id=fixture.execution_id,
        generation=fixture.generation,
    )


def replay_evidence_layer(fixture: ReplayFixture) -> tuple[list[str], PromptOutcome]:
    """Tokens of the events the adapter would emit, and the outcome it would build."""
    correlation = fixture_correlation(fixture)
    shaper = StreamShaper(cursor_agent=is_cursor_agent(fixture.agent))
    state = evidence_start(correlation=correlation)
    tokens: list[str] = []
    for frame in fixture.frames[:-1]:
        for event in _frame_events(frame, session_id=fixture.session_id, agent=fixture.agent):
            for shown in shaper.feed(event):
                state = evidence_observe(state, shown, correlation=correlation)
                tokens.append(event_token(shown))
    response = fixture.frames[-1]
    error = response.get("error")
    if isinstance(error, dict):
        for shown in shaper.release_held():
            state = evidence_observe(state, shown, correlation=correlation)
            tokens.append(event_token(shown))
        terminal = TerminalError(
            source=Source.ACP_PROMPT,
            message=str(error.get("message", "")),
            jsonrpc_code=error.get("code"),
            data=error.get("data"),
        )
    elif (held := shaper.take_held()) is not None:
        terminal = TerminalError(source=Source.ACP_CHUNK, message=held)
    else:
        stop_reason = str((response.get("result") or {}).get("stopReason", ""))
        tokens.append(event_token(PromptEnd(stop_reason=stop_reason)))
        outcome: PromptOutcome = PromptCompleted(
            stop_reason=stop_reason, correlation=correlation, evidence=state
        )
        return tokens, outcome
    failure = failure_build(
        terminal=terminal,
        attempt=state,
        correlation=correlation,
        provider_id=fixture.agent,
        model_id=None,
    )
    return tokens, failure


def _frame_events(frame: dict[str, Any], *, session_id: str, agent: str) -> tuple[AgentEvent, ...]:
    params = frame.get("params")
    if frame.get("method") != "session/update" or not isinstance(params, dict):
        return ()
    if params.get("sessionId") != session_id or not isinstance(params.get("update"), dict):
        return ()
    return update_events(params["update"], agent=agent)
