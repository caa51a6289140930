"""What a failed run tells the user: the single place a provider failure becomes an outcome.

Provider failures go through the visible retry ladder (recovery.django.ladder); when it hands the
turn back, ``ladder_outcome`` words the card. A target that cannot be called at all (no key,
unsupported kind) never reaches the ladder: ``failure_outcome`` words it directly.
"""

from __future__ import annotations

from dataclasses import dataclass

from recovery.classify import classify
from recovery.policy import Decision
from recovery.redact import redact_diagnostic
from recovery.taxonomy import CODE_POLICY, Code, ProviderFailure

MESSAGE_LIMIT_BYTES = 1024


@dataclass(frozen=True, slots=True)
class RunFailure:
    code: str
    message: str  # redacted; safe to store, log and show


def failure_outcome(*, failure: ProviderFailure, partial_output: bool) -> RunFailure:
    from sessions_app.agent.targets import TargetUnusable

    if isinstance(failure, TargetUnusable):
        return RunFailure(code=failure.code, message=redact_diagnostic(failure.detail))
    classification = classify(failure.evidence)
    reason = CODE_POLICY[classification.code].reason
    detail = failure.detail or failure.evidence.excerpt
    parts = [f"{reason}."]
    if partial_output:
        parts.append("The answer stopped part-way; what arrived is kept and marked incomplete.")
    parts.append("Nothing was retried automatically; send the prompt again when ready.")
    if detail:
        parts.append(f"Details: {detail}")
    message = redact_diagnostic(" ".join(parts), limit_bytes=MESSAGE_LIMIT_BYTES)
    return RunFailure(code=str(classification.code), message=message)


def ladder_outcome(*, decision: Decision, failure: ProviderFailure) -> RunFailure:
    """The honest card text when the ladder hands the turn back to the person."""
    detail = failure.detail or failure.evidence.excerpt
    message = decision.message + (f" Details: {detail}" if detail else "")
    return RunFailure(
        code=str(decision.classification.code),
        message=redact_diagnostic(message, limit_bytes=MESSAGE_LIMIT_BYTES),
    )


def unexpected_outcome() -> RunFailure:
    return RunFailure(
        code=str(Code.UNCLASSIFIED),
        message="Something went wrong on our side while running this prompt. It was not retried.",
    )
