"""The one failure judge: a failed provider call in, classification + decision + attempt record out.

Every caller (the app's retry ladder, library users, the CLI) hands a failure here exactly once;
nothing else classifies a failure and then decides about it. The judge writes nothing: persisting
the decision and the record is the caller's job.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from recovery.budget import Budget
from recovery.classify import classify
from recovery.clock import Clock
from recovery.policy import Decision, decide
from recovery.taxonomy import Classification, Evidence
from recovery.telemetry import AttemptRecord, attempt_record_build


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
) -> Judgement:
    """Classify ``evidence``, decide with ``budget``, and build the call's attempt record.

    ``attempt`` is the 1-based number of the failed call within the turn (for the record).
    """
    classification = classify(evidence)
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
        record=call_record(
            attempt=attempt,
            target=current_target,
            stats=stats,
            evidence=evidence,
            classification=classification,
            decision=decision,
        ),
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
