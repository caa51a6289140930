"""May a failed whole prompt be sent again? Only with proof that the attempt showed nothing.

An agent's whole prompt is its retry unit (an ACP agent runs its own loop). The adapter reports
what the attempt showed as ``ReplayFacts`` without judging the failure; the judge classifies the
failure once and asks ``replay_disposition``. The questions, in order: is the evidence about this
attempt at all; is the terminal failure a known transient one (a signature hidden in JSON-RPC
``data`` is not: the classifier never sees it, so it is manual every time); did the agent touch a
tool; did it produce output; and if it printed a provider diagnostic first, is that diagnostic
provably the same failure (same high-confidence, fallback-eligible code, and its text contained
in the terminal message)?
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from recovery.effects import WorkspaceEffects
from recovery.taxonomy import Classification, Code, Confidence, Exposure, Klass

_WHITESPACE_RUN = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """Trimmed, whitespace runs collapsed to one space; case is kept (comparison is exact)."""
    return _WHITESPACE_RUN.sub(" ", text).strip()


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
    WORKSPACE_CHANGED = "workspace_changed"
    EFFECTS_UNKNOWN = "effects_unknown"


_ALLOWING = frozenset({ReplayReason.PRE_RESULT_SAFE, ReplayReason.DIAGNOSTIC_MATCHED})


@dataclass(frozen=True, slots=True)
class ReplayDisposition:
    retry_allowed: bool
    reason: ReplayReason

    @classmethod
    def because(cls, reason: ReplayReason) -> ReplayDisposition:
        return cls(retry_allowed=reason in _ALLOWING, reason=reason)


@dataclass(frozen=True, slots=True)
class RecordedDiagnostic:
    """The first provider diagnostic an attempt showed, as the catalogue read it when it arrived."""

    code: Code
    confidence: Confidence
    fallback_eligible: bool
    text: str  # normalised; never empty


@dataclass(frozen=True, slots=True)
class ReplayFacts:
    """What one failed prompt attempt showed: observations only, already redacted and data-free."""

    current: bool  # the attempt's evidence and its failure both belong to this prompt generation
    tool_activity: bool  # a tool call, a tool update or a permission request
    output_seen: bool  # an unmarked non-empty assistant or thought chunk
    diagnostic: RecordedDiagnostic | None  # the first since the last unmarked output
    message: str  # the terminal error's message, diagnostic tier
    signature_in_data: bool = False  # the catalogue knew a transient failure in JSON-RPC data
    # What the attempt did to its workspace (the app's snapshots); None when the caller keeps no
    # workspace (a library user), and then only the stream's facts decide.
    effects: WorkspaceEffects | None = None


def replay_disposition(*, facts: ReplayFacts, classification: Classification) -> ReplayDisposition:
    """Whether the whole prompt may be sent again, given the failure's one classification."""
    return ReplayDisposition.because(_reason(facts, classification))


def replay_exposure(
    *, facts: ReplayFacts, disposition: ReplayDisposition, classification: Classification
) -> Exposure:
    """How exposed the policy must treat the attempt: nothing only when the replay is proven safe.

    A transient failure that may not be replayed (stale evidence, a visible diagnostic) must not
    look clean to the policy, or it would retry what the replay rules refused.
    """
    if disposition.retry_allowed:
        return Exposure.NONE
    if facts.tool_activity or (facts.effects is not None and not facts.effects.clean):
        return Exposure.TOOL_CALL
    if facts.output_seen or facts.diagnostic is not None or classification.is_transient:
        return Exposure.CONTENT
    return Exposure.NONE


def _reason(facts: ReplayFacts, found: Classification) -> ReplayReason:
    if not facts.current:
        return ReplayReason.NOT_CURRENT
    if found.klass is not Klass.TRANSIENT or found.code is Code.UNCLASSIFIED:
        if facts.signature_in_data:
            return ReplayReason.SIGNATURE_ONLY_IN_DATA
        return ReplayReason.TERMINAL_NOT_TRANSIENT
    if facts.tool_activity:
        return ReplayReason.TOOL_ACTIVITY
    if facts.effects is not None and not facts.effects.clean:
        if not facts.effects.known:
            return ReplayReason.EFFECTS_UNKNOWN
        return ReplayReason.WORKSPACE_CHANGED
    if facts.output_seen:
        return ReplayReason.OUTPUT_SEEN
    diagnostic = facts.diagnostic
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
    if not diagnostic.text or diagnostic.text not in normalise_text(facts.message):
        return ReplayReason.DIAGNOSTIC_TEXT_NOT_CONTAINED
    return ReplayReason.DIAGNOSTIC_MATCHED
