"""One structured log line per provider attempt.

Secrets are excluded by construction: every field is a number, an enum value, a catalogue rule
id or a configured target name (passed through the credential tier anyway). No provider text,
no headers, no prompt.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass

from recovery.redact import redact_credentials

ATTEMPT_LOGGER = "kandev.recovery.attempts"
EVENT_NAME = "provider_attempt"


@dataclass(frozen=True, slots=True)
class AttemptRecord:
    attempt: int
    target: str
    phase: str | None
    kind: str
    code: str
    rule_id: str | None
    exposure: str
    wait_s: float
    ttft_ms: float | None
    bytes_received: int
    input_tokens: int | None
    output_tokens: int | None
    decision: str  # an Action value, or "success"


def attempt_record_build(
    *,
    attempt: int,
    target: str,
    evidence: object | None = None,
    classification: object | None = None,
    decision: object | None = None,
    ttft_ms: float | None = None,
    bytes_received: int = 0,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
) -> AttemptRecord:
    """Build a record from the engine's values; a call without evidence is a success."""
    return AttemptRecord(
        attempt=attempt,
        target=target,
        phase=_value(getattr(evidence, "phase", None)),
        kind=_value(getattr(evidence, "kind", None)) or "none",
        code=_value(getattr(classification, "code", None)) or "none",
        rule_id=getattr(classification, "rule_id", None),
        exposure=_value(getattr(evidence, "exposure", None)) or "none",
        wait_s=float(getattr(decision, "wait_s", 0.0) or 0.0),
        ttft_ms=ttft_ms,
        bytes_received=bytes_received,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        decision=_value(getattr(decision, "action", None)) or "success",
    )


def attempt_record_json(record: AttemptRecord) -> str:
    fields = asdict(record)
    fields["target"] = redact_credentials(record.target)
    return json.dumps({"event": EVENT_NAME, **fields}, sort_keys=True, separators=(",", ":"))


def emit_attempt(record: AttemptRecord, *, logger: logging.Logger | None = None) -> None:
    (logger or logging.getLogger(ATTEMPT_LOGGER)).info(attempt_record_json(record))


def _value(member: object | None) -> str | None:
    if member is None:
        return None
    return str(getattr(member, "value", member))
