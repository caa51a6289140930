"""What a failed run tells the user: a code and a redacted, bounded card message.

The words themselves live in ``recovery.wording``; this module picks them for each way a turn can
end badly and makes them safe to store, log and show.
"""

from __future__ import annotations

from dataclasses import dataclass

from recovery import wording
from recovery.effects import WorkspaceEffects
from recovery.policy import Decision
from recovery.redact import redact_diagnostic
from recovery.replay import ReplayReason
from recovery.taxonomy import Classification, Code

MESSAGE_LIMIT_BYTES = 1024


@dataclass(frozen=True, slots=True)
class RunFailure:
    code: str
    message: str  # redacted; safe to store, log and show


def handed_back_outcome(*, code: str, detail: str) -> RunFailure:
    """A turn ended without a failure to judge (the target can't be called, the agent loop hit
    its limit): it never reaches the ladder."""
    return RunFailure(code=code, message=_safe(detail))


def ladder_outcome(*, decision: Decision, detail: str) -> RunFailure:
    """The honest card text when the ladder hands the turn back to the person."""
    return RunFailure(
        code=str(decision.classification.code),
        message=_safe(wording.with_detail(decision.message, detail)),
    )


def replay_refused_outcome(
    *,
    classification: Classification,
    reason: ReplayReason,
    partial: bool,
    detail: str,
    effects: WorkspaceEffects | None = None,
) -> RunFailure:
    """An agent's failed prompt that the judge would not send again automatically; when the
    attempt changed its workspace, the card says which files first (effects are evidence)."""
    message = wording.replay_refused_card(
        classification.code, reason=reason, partial=partial, detail=detail
    )
    if effects is not None and effects.known and effects.changed_count:
        lines = (
            wording.effects_line(count=effects.changed_count, paths=effects.changed),
            wording.RESUME_KEEPS,
        )
        message = " ".join((*lines, message))
    elif effects is not None and not effects.known:
        message = f"{wording.EFFECTS_UNKNOWN_LINE} {message}"
    return RunFailure(code=str(classification.code), message=_safe(message))


def unexpected_outcome() -> RunFailure:
    return RunFailure(code=str(Code.UNCLASSIFIED), message=wording.UNEXPECTED)


def _safe(message: str) -> str:
    return redact_diagnostic(message, limit_bytes=MESSAGE_LIMIT_BYTES)
