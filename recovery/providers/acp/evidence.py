"""What one prompt attempt has shown so far: the facts a whole-prompt replay is judged on.

Pure values and functions. Feed every event the consumers saw, in order, with the correlation it
arrived under; evidence from another session, execution or generation (or generation 0) is
counted and otherwise ignored, so it can never make an attempt look clean.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from recovery.providers.acp.agent_events import (
    AgentEvent,
    AgentPermission,
    AgentText,
    AgentThought,
    AgentToolCall,
    AgentToolCallUpdate,
    Correlation,
    ResponseAttemptBoundary,
)
from recovery.providers.acp.convert import chunk_classification
from recovery.replay import RecordedDiagnostic, normalise_text


@dataclass(frozen=True, slots=True)
class AttemptEvidence:
    correlation: Correlation
    output_seen: bool = False  # an unmarked non-empty assistant or thought chunk
    tool_activity: bool = False  # a tool call, a tool update or a permission request
    diagnostic: RecordedDiagnostic | None = None  # the first since the last unmarked output
    boundaries: int = 0  # response-attempt boundaries; they never clear the facts above
    ignored: int = 0  # observations refused for belonging to another attempt


def evidence_start(*, correlation: Correlation) -> AttemptEvidence:
    return AttemptEvidence(correlation=correlation)


def evidence_observe(
    state: AttemptEvidence, event: AgentEvent, *, correlation: Correlation
) -> AttemptEvidence:
    if correlation != state.correlation or not correlation.can_authorise:
        return replace(state, ignored=state.ignored + 1)
    if isinstance(event, (AgentText, AgentThought)):
        return _observe_chunk(state, event)
    if isinstance(event, (AgentToolCall, AgentToolCallUpdate, AgentPermission)):
        # Tool activity does not clear a recorded diagnostic; it makes the attempt unsafe.
        return replace(state, tool_activity=True)
    if isinstance(event, ResponseAttemptBoundary):
        return replace(state, boundaries=state.boundaries + 1)
    return state


def _observe_chunk(state: AttemptEvidence, event: AgentText | AgentThought) -> AttemptEvidence:
    text = normalise_text(event.text)
    if not text:
        return state
    if not event.diagnostic:
        return replace(state, output_seen=True, diagnostic=None)
    if state.diagnostic is not None:
        return state  # the first diagnostic of the attempt is the one that counts
    found = chunk_classification(event.text)
    return replace(
        state,
        diagnostic=RecordedDiagnostic(
            code=found.code,
            confidence=found.confidence,
            fallback_eligible=found.fallback_eligible,
            text=text,
        ),
    )
