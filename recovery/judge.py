"""The one failure judge: a failed provider call in, classification + decision + attempt record out.

Every caller (the app's retry ladder, library users) hands a failure here exactly once; nothing
else classifies a failure and then decides about it. For an agent whose whole prompt is the retry
unit (ACP), the adapter's ``ReplayFacts`` come too, and the judge also says whether the prompt may
be sent again. The judge writes nothing: persisting the decision and the record is the caller's.

    judgement = judge(evidence=failure.evidence, replay=failure.replay_facts, budget=budget, ...)
    judgement.replay.retry_allowed, judgement.replay.reason      # ACP only; None otherwise
    judgement.decision.action, judgement.decision.message        # MANUAL whenever replay is refused
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

from recovery.budget import Budget
from recovery.classify import classify
from recovery.clock import Clock
from recovery.effects import WorkspaceEffects
from recovery.policy import Decision, decide, manual_decision
from recovery.replay import ReplayDisposition, ReplayFacts, replay_disposition, replay_exposure
from recovery.taxonomy import Classification, Evidence
from recovery.telemetry import AttemptRecord, attempt_record_build
from recovery.wording import replay_refused_message


@dataclass(frozen=True, slots=True)
class CallStats:
    """What the guarded stream measured about one call (all optional)."""

    ttft_ms: float | None = None
    bytes_received: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None

    @classmethod
    def of(cls, stream: object | None) -> CallStats:
        """Read the measurements off a guarded stream (or anything shaped like one)."""
        usage = getattr(stream, "usage", None)
        return cls(
            ttft_ms=getattr(stream, "ttft_ms", None),
            bytes_received=getattr(stream, "bytes_received", 0) or 0,
            input_tokens=getattr(usage, "input_tokens", None),
            output_tokens=getattr(usage, "output_tokens", None),
        )


@dataclass(frozen=True, slots=True)
class Judgement:
    classification: Classification
    decision: Decision
    record: AttemptRecord
    evidence: Evidence  # as judged: for a whole-prompt replay, with the exposure the judge used
    # The budget as judged: the failed call's deadline started (``Budget.record_failure``); the
    # caller persists this one.
    budget: Budget
    replay: ReplayDisposition | None = None  # whether the whole prompt may be sent again (ACP)


@dataclass(frozen=True, slots=True)
class ReplayJudgement:
    classification: Classification
    replay: ReplayDisposition
    evidence: Evidence  # exposure NONE only when the replay is proven safe


def judge(
    *,
    evidence: Evidence,
    budget: Budget,
    attempt: int,
    current_target: str,
    fallbacks: Sequence[str],
    clock: Clock,
    rng: random.Random,
    stats: CallStats | None = None,
    replay: ReplayFacts | None = None,
    effects: WorkspaceEffects | None = None,
) -> Judgement:
    """Classify ``evidence``, decide with ``budget``, and build the call's attempt record.

    ``attempt`` is the 1-based number of the failed call within the turn (for the record).
    ``replay``: what a failed whole-prompt attempt showed (ACP); a refused replay is manual.
    ``effects``: what the attempt did to its workspace (the app's snapshots); a changed or
    unknown workspace refuses the replay like a tool call does.
    The failed call's deadline runs from its first failure, which may be this one.
    """
    budget = budget.record_failure(clock=clock)
    if replay is not None and effects is not None:
        replay = replace(replay, effects=effects)
    disposition = None
    if replay is None:
        classification = classify(evidence)
    else:
        verdict = judge_replay(evidence=evidence, replay=replay)
        classification, disposition, evidence = (
            verdict.classification,
            verdict.replay,
            verdict.evidence,
        )
    if disposition is not None and not disposition.retry_allowed:
        decision = manual_decision(
            classification=classification,
            budget=budget,
            message=replay_refused_message(classification.code, reason=disposition.reason),
        )
    else:
        decision = decide(
            evidence=evidence,
            classification=classification,
            budget=budget,
            current_target=current_target,
            fallbacks=fallbacks,
            clock=clock,
            rng=rng,
        )
    return Judgement(
        classification=classification,
        decision=decision,
        evidence=evidence,
        budget=budget,
        replay=disposition,
        record=call_record(
            attempt=attempt,
            target=current_target,
            stats=stats,
            evidence=evidence,
            classification=classification,
            decision=decision,
        ),
    )


def judge_replay(*, evidence: Evidence, replay: ReplayFacts) -> ReplayJudgement:
    """The classification of a failed whole-prompt attempt and whether it may be sent again.

    The part of ``judge`` that needs no budget: the recorded-replay fixtures judge a
    ``PromptFailure``'s ``evidence`` and ``replay_facts`` with it directly.
    """
    classification = classify(evidence)
    disposition = replay_disposition(facts=replay, classification=classification)
    exposure = replay_exposure(facts=replay, disposition=disposition, classification=classification)
    return ReplayJudgement(
        classification=classification,
        replay=disposition,
        evidence=replace(evidence, exposure=exposure),
    )


def call_record(
    *,
    attempt: int,
    target: str,
    stats: CallStats | None = None,
    evidence: Evidence | None = None,
    classification: Classification | None = None,
    decision: Decision | None = None,
) -> AttemptRecord:
    """The attempt record of a call; with no evidence it records a success."""
    stats = stats or CallStats()
    return attempt_record_build(
        attempt=attempt,
        target=target,
        evidence=evidence,
        classification=classification,
        decision=decision,
        ttft_ms=stats.ttft_ms,
        bytes_received=stats.bytes_received,
        input_tokens=stats.input_tokens,
        output_tokens=stats.output_tokens,
    )
