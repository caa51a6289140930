"""An ACP failure meets the one judge: the adapter reports what the attempt showed, the judge
classifies it once, says whether the whole prompt may be sent again, and decides."""

from __future__ import annotations

import random

import pytest

from recovery.budget import Budget, RetrySettings
from recovery.clock import FakeClock
from recovery.judge import judge
from recovery.policy import Action
from recovery.providers.acp import (
    AgentText,
    AgentToolCall,
    Correlation,
    ReplayReason,
    TerminalError,
    evidence_observe,
    evidence_start,
    failure_build,
)
from recovery.providers.acp.convert import update_events
from recovery.taxonomy import Code, Exposure, Source

CURRENT = Correlation(session_id="s-1", execution_id="e-1", generation=2)
STALE = Correlation(session_id="s-1", execution_id="e-1", generation=1)
DIAG_529 = (
    "API Error: 529 Overloaded. This is a server-side issue, usually temporary — "
    "try again in a moment."
)
ERROR_529 = "Internal error: " + DIAG_529 + " If it persists, check the status page."
TOOL = AgentToolCall(id="t1", title="Read", kind="read", status="pending")


def failed(*events, message=ERROR_529, start=CURRENT):
    state = evidence_start(correlation=start)
    for event in events:
        state = evidence_observe(state, event, correlation=start)
    return failure_build(
        terminal=TerminalError(source=Source.ACP_PROMPT, message=message, jsonrpc_code=-32603),
        attempt=state,
        correlation=CURRENT,
        provider_id="claude-code-acp",
        model_id=None,
    )


def judged(failure, *, fallbacks=()):
    clock = FakeClock()
    budget = Budget.start(settings=RetrySettings(jitter=0.0), clock=clock, target="agent")
    return judge(
        evidence=failure.evidence,
        replay=failure.replay_facts,
        budget=budget.record_attempt(target="agent"),
        attempt=1,
        current_target="agent",
        fallbacks=fallbacks,
        clock=clock,
        rng=random.Random(0),
    )


@pytest.mark.parametrize(
    ("events", "start", "shown"),
    [
        ((), CURRENT, Exposure.NONE),
        ((AgentText(text=DIAG_529, diagnostic=True),), CURRENT, Exposure.METADATA),
        ((AgentText(text="Looking at the notes."),), CURRENT, Exposure.CONTENT),
        ((TOOL,), CURRENT, Exposure.TOOL_CALL),
        ((), STALE, Exposure.CONTENT),
    ],
)
def test_the_adapter_reports_what_the_attempt_showed(events, start, shown):
    assert failed(*events, start=start).evidence.exposure is shown


def test_a_matching_diagnostic_lets_the_judge_retry_the_whole_prompt():
    judgement = judged(failed(AgentText(text=DIAG_529, diagnostic=True)))

    assert judgement.classification.code is Code.PROVIDER_OVERLOADED
    assert (judgement.replay.retry_allowed, judgement.replay.reason) == (
        True,
        ReplayReason.DIAGNOSTIC_MATCHED,
    )
    assert judgement.evidence.exposure is Exposure.NONE
    assert judgement.decision.action is Action.RETRY
    assert judgement.decision.message.startswith("Provider overloaded. Retrying in 5 s")
    assert (judgement.record.exposure, judgement.record.decision) == ("none", "retry")


def test_a_refused_replay_is_manual_and_says_why_even_when_a_fallback_is_free():
    judgement = judged(failed(TOOL), fallbacks=("backup",))

    assert judgement.replay.reason is ReplayReason.TOOL_ACTIVITY
    assert judgement.evidence.exposure is Exposure.TOOL_CALL
    assert judgement.decision.action is Action.MANUAL
    assert judgement.decision.message == (
        "Provider overloaded. The agent had already used a tool, so the prompt was not sent "
        "again automatically."
    )


def test_evidence_that_cannot_be_tied_to_the_prompt_never_looks_clean():
    judgement = judged(failed(start=STALE))

    assert judgement.replay.reason is ReplayReason.NOT_CURRENT
    assert judgement.evidence.exposure is Exposure.CONTENT
    assert judgement.decision.action is Action.MANUAL


def test_a_direct_provider_failure_has_no_replay_question():
    failure = failed()
    clock = FakeClock()
    budget = Budget.start(settings=RetrySettings(jitter=0.0), clock=clock, target="agent")

    judgement = judge(
        evidence=failure.evidence,
        budget=budget.record_attempt(target="agent"),
        attempt=1,
        current_target="agent",
        fallbacks=(),
        clock=clock,
        rng=random.Random(0),
    )

    assert judgement.replay is None
    assert judgement.evidence == failure.evidence
    assert judgement.decision.action is Action.RETRY


CURSOR_STALLED = "Error: RetriableError: Connection stalled"


def cursor_failure(*events):
    state = evidence_start(correlation=CURRENT)
    for event in events:
        state = evidence_observe(state, event, correlation=CURRENT)
    return failure_build(
        terminal=TerminalError(source=Source.ACP_CHUNK, message=CURSOR_STALLED),
        attempt=state,
        correlation=CURRENT,
        provider_id="cursor-agent",
        model_id=None,
    )


def judged_at(failure, *, elapsed_s, fallbacks=("backup",)):
    clock = FakeClock()
    budget = Budget.start(settings=RetrySettings(jitter=0.0), clock=clock, target="agent")
    budget = budget.record_attempt(target="agent").record_failure(clock=clock)
    clock.advance(elapsed_s)
    return judge(
        evidence=failure.evidence,
        replay=failure.replay_facts,
        budget=budget,
        attempt=2,
        current_target="agent",
        fallbacks=fallbacks,
        clock=clock,
        rng=random.Random(0),
    )


def test_a_cursor_loss_is_retried_on_the_selected_provider():
    judgement = judged_at(cursor_failure(), elapsed_s=0)

    assert judgement.classification.code is Code.AGENT_TRANSPORT_LOST
    assert not judgement.classification.fallback_eligible
    assert (judgement.decision.action, judgement.decision.target) == (Action.RETRY, "agent")


def test_a_cursor_loss_near_the_deadline_keeps_the_selected_provider():
    judgement = judged_at(cursor_failure(), elapsed_s=148)  # 2 s left, the ladder asks for 5

    assert judgement.decision.action is Action.MANUAL  # never a switch to "backup"
    assert judgement.decision.target is None


def test_a_chunk_quoting_a_transport_loss_does_not_authorise_a_whole_prompt_replay():
    # The agent printed the same line before the failure: it is ordinary output, not a
    # diagnostic, because the cause is not fallback-eligible.
    (chunk,) = update_events(
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": CURSOR_STALLED},
        }
    )
    assert not chunk.diagnostic

    judgement = judged_at(cursor_failure(chunk), elapsed_s=0, fallbacks=())

    assert judgement.replay.reason is ReplayReason.OUTPUT_SEEN
    assert judgement.decision.action is Action.MANUAL
