"""May the whole prompt be sent again? Only with proof that the attempt showed nothing.

The questions, in order: is the evidence about this attempt at all; is the terminal failure a
known transient one (a signature hidden in JSON-RPC ``data`` is not: the classifier never sees
it, so it is manual every time); did the agent touch a tool; did it produce output; and if it
printed a provider diagnostic first, is that diagnostic provably the same failure (same
high-confidence, fallback-eligible code, and its text contained in the terminal message)?
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from recovery.providers.acp.events import Correlation
from recovery.providers.acp.evidence import AttemptEvidence, normalise_text
from recovery.taxonomy import Classification, Code, Confidence, Klass


class ReplayReason(enum.StrEnum):
    PRE_RESULT_SAFE = "pre_result_safe"
    DIAGNOSTIC_MATCHED = "diagnostic_matched"
    NOT_CURRENT = "not_current"
    SIGNATURE_ONLY_IN_DATA = "signature_only_in_data"
    TERMINAL_NOT_TRANSIENT = "terminal_not_transient"
    TOOL_ACTIVITY = "tool_activity"
    OUTPUT_SEEN = "output_seen"
    DIAGNOSTIC_MISMATCH = "diagnostic_mismatch"
    DIAGNOSTIC_TEXT_NOT_CONTAINED = "diagnostic_text_not_contained"


_ALLOWING = frozenset({ReplayReason.PRE_RESULT_SAFE, ReplayReason.DIAGNOSTIC_MATCHED})


@dataclass(frozen=True, slots=True)
class ReplayDisposition:
    retry_allowed: bool
    reason: ReplayReason

    @classmethod
    def because(cls, reason: ReplayReason) -> ReplayDisposition:
        return cls(retry_allowed=reason in _ALLOWING, reason=reason)


@dataclass(frozen=True, slots=True)
class TerminalFacts:
    """The terminal failure as the evidence layer needs it (already redacted, data-free)."""

    correlation: Correlation
    classification: Classification
    message: str
    signature_only_in_data: bool = False


def replay_disposition(
    *, evidence: AttemptEvidence, terminal: TerminalFacts, current: Correlation
) -> ReplayDisposition:
    return ReplayDisposition.because(_reason(evidence, terminal, current))


def _reason(
    evidence: AttemptEvidence, terminal: TerminalFacts, current: Correlation
) -> ReplayReason:
    if not (
        current.can_authorise
        and evidence.correlation == current
        and terminal.correlation == current
    ):
        return ReplayReason.NOT_CURRENT
    found = terminal.classification
    if found.klass is not Klass.TRANSIENT or found.code is Code.UNCLASSIFIED:
        if terminal.signature_only_in_data:
            return ReplayReason.SIGNATURE_ONLY_IN_DATA
        return ReplayReason.TERMINAL_NOT_TRANSIENT
    if evidence.tool_activity:
        return ReplayReason.TOOL_ACTIVITY
    if evidence.output_seen:
        return ReplayReason.OUTPUT_SEEN
    diagnostic = evidence.diagnostic
    if diagnostic is None:
        return ReplayReason.PRE_RESULT_SAFE
    if not (
        diagnostic.code is found.code
        and diagnostic.confidence is Confidence.HIGH
        and found.confidence is Confidence.HIGH
        and diagnostic.fallback_eligible
        and found.fallback_eligible
    ):
        return ReplayReason.DIAGNOSTIC_MISMATCH
    if not diagnostic.text or diagnostic.text not in normalise_text(terminal.message):
        return ReplayReason.DIAGNOSTIC_TEXT_NOT_CONTAINED
    return ReplayReason.DIAGNOSTIC_MATCHED
