"""The judge refuses an automatic whole-prompt retry when the attempt changed its workspace, or
when what it did there could not be measured (fail closed); a clean workspace changes nothing."""

from __future__ import annotations

import random

import pytest

from recovery.budget import Budget, RetrySettings
from recovery.clock import FakeClock
from recovery.effects import UNKNOWN_EFFECTS, effects_of, granted_is_effect
from recovery.judge import judge
from recovery.policy import Action
from recovery.providers.acp import (
    Correlation,
    ReplayReason,
    TerminalError,
    evidence_start,
    failure_build,
)
from recovery.taxonomy import Exposure, Source

CURRENT = Correlation(session_id="s-1", execution_id="e-1", generation=2)
ERROR_529 = "Internal error: API Error: 529 Overloaded. This is a server-side issue."


def judged(effects):
    failure = failure_build(
        terminal=TerminalError(source=Source.ACP_PROMPT, message=ERROR_529, jsonrpc_code=-32603),
        attempt=evidence_start(correlation=CURRENT),
        correlation=CURRENT,
        provider_id="claude-code-acp",
        model_id=None,
    )
    clock = FakeClock()
    budget = Budget.start(settings=RetrySettings(jitter=0.0), clock=clock, target="agent")
    return judge(
        evidence=failure.evidence,
        replay=failure.replay_facts,
        budget=budget.record_attempt(target="agent"),
        attempt=1,
        current_target="agent",
        fallbacks=(),
        clock=clock,
        rng=random.Random(0),
        effects=effects,
    )


def test_it_retries_automatically_when_the_workspace_did_not_change():
    judgement = judged(effects_of(changed=[]))

    assert judgement.replay.retry_allowed
    assert judgement.decision.action is Action.RETRY


@pytest.mark.parametrize(
    ("effects", "reason"),
    [
        (effects_of(changed=["notes.txt"]), ReplayReason.WORKSPACE_CHANGED),
        (effects_of(changed=[], non_read_granted=True), ReplayReason.WORKSPACE_CHANGED),
        (UNKNOWN_EFFECTS, ReplayReason.EFFECTS_UNKNOWN),
    ],
)
def test_it_asks_the_person_when_the_workspace_changed_or_is_unknown(effects, reason):
    judgement = judged(effects)

    assert (judgement.replay.retry_allowed, judgement.replay.reason) == (False, reason)
    assert judgement.decision.action is Action.MANUAL
    assert judgement.evidence.exposure is Exposure.TOOL_CALL
    assert "not sent again automatically" in judgement.decision.message


def test_it_keeps_the_exact_count_when_the_list_is_capped():
    effects = effects_of(changed=[f"f{i:03}.txt" for i in range(50)])

    assert (effects.changed_count, len(effects.changed)) == (50, 20)


@pytest.mark.parametrize(
    ("granted", "kind", "effect"),
    [
        (True, "read", False),
        (True, "search", False),
        (True, "edit", True),
        (True, None, True),
        (False, "edit", False),
    ],
)
def test_it_counts_a_granted_permission_as_an_effect_unless_it_only_looks(granted, kind, effect):
    assert granted_is_effect(granted=granted, tool_kind=kind) is effect
