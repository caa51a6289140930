"""How a prompt ends: completed, or failed with redacted evidence, allowlisted metadata and a
replay disposition. Builders for each way an ACP prompt can fail live here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from recovery.classify import classify
from recovery.providers.acp.events import Correlation
from recovery.providers.acp.evidence import AttemptEvidence
from recovery.providers.acp.metadata import PromptErrorMetadata, metadata_project
from recovery.providers.acp.replay import ReplayDisposition, TerminalFacts, replay_disposition
from recovery.providers.acp.structured import StructuredFailure, codex_failure, gemini_failure
from recovery.redact import redact_diagnostic
from recovery.taxonomy import (
    EXCERPT_LIMIT_BYTES,
    Classification,
    Evidence,
    Exposure,
    Kind,
    Phase,
    Source,
)

_MESSAGE_LIMIT_BYTES = EXCERPT_LIMIT_BYTES - 256  # room for the JSON envelope around it
_DATA_TEXT_LIMIT = 16


@dataclass(frozen=True, slots=True)
class PromptCompleted:
    stop_reason: str
    correlation: Correlation
    evidence: AttemptEvidence
    model_id: str | None = None


@dataclass(frozen=True, slots=True)
class PromptFailure:
    """The sanitised provider projection of a failed prompt. Raw JSON-RPC data never gets here.

    ``evidence.exposure`` is NONE only when the replay is allowed or the attempt showed nothing
    (so ``recovery.policy.decide`` reaches the right answer even on its own); callers still
    check ``replay.retry_allowed`` before any automatic whole-prompt retry.
    """

    evidence: Evidence
    classification: Classification
    metadata: PromptErrorMetadata
    replay: ReplayDisposition
    message: str  # diagnostic tier, bounded
    correlation: Correlation
    attempt: AttemptEvidence


PromptOutcome = PromptCompleted | PromptFailure


@dataclass(frozen=True, slots=True)
class TerminalError:
    """What the adapter saw end the prompt, before judgement (raw; stays inside the adapter)."""

    source: Source
    message: str
    jsonrpc_code: Any = None
    data: Any = None
    kind: Kind = Kind.UNKNOWN
    phase: Phase | None = None


def failure_build(
    *,
    terminal: TerminalError,
    attempt: AttemptEvidence,
    correlation: Correlation,
    provider_id: str | None,
    model_id: str | None,
) -> PromptFailure:
    message = redact_diagnostic(terminal.message, limit_bytes=_MESSAGE_LIMIT_BYTES)
    metadata = metadata_project(
        code=terminal.jsonrpc_code, data=terminal.data, provider_id=provider_id, model_id=model_id
    )
    structured = _structured(terminal, metadata=metadata, message=message)
    if structured.excerpt is not None:
        excerpt = structured.excerpt
    elif terminal.source is Source.ACP_PROMPT:
        # The classifier reads a JSON-RPC error by its message; data is deliberately absent.
        excerpt = json.dumps(
            {"code": metadata.jsonrpc_code, "message": message}, ensure_ascii=False
        )
    else:
        excerpt = message
    provider_code = str(metadata.jsonrpc_code) if metadata.jsonrpc_code is not None else None
    bare = Evidence(
        source=terminal.source,
        excerpt=excerpt,
        phase=terminal.phase,
        kind=terminal.kind,
        status=structured.status,
        retry_after_ms=structured.retry_after_ms,
        provider_code=structured.kind or provider_code,
        provider_id=metadata.provider_id,
        model_id=metadata.model_id,
        generation=correlation.generation,
    )
    classification = classify(bare)
    replay = replay_disposition(
        evidence=attempt,
        terminal=TerminalFacts(
            correlation=correlation,
            classification=classification,
            message=message,
            signature_only_in_data=_signature_only_in_data(terminal, classification),
        ),
        current=correlation,
    )
    return PromptFailure(
        evidence=_with_exposure(bare, attempt=attempt, replay=replay, found=classification),
        classification=classification,
        metadata=metadata,
        replay=replay,
        message=message,
        correlation=correlation,
        attempt=attempt,
    )


def _structured(
    terminal: TerminalError, *, metadata: PromptErrorMetadata, message: str
) -> StructuredFailure:
    # Only a prompt's own JSON-RPC error carries these; a chunk or an exit never does.
    if terminal.source is not Source.ACP_PROMPT:
        return StructuredFailure()
    return (
        codex_failure(terminal.data)
        or gemini_failure(code=metadata.jsonrpc_code, message=message)
        or StructuredFailure()
    )


def _with_exposure(
    evidence: Evidence,
    *,
    attempt: AttemptEvidence,
    replay: ReplayDisposition,
    found: Classification,
) -> Evidence:
    if replay.retry_allowed:
        exposure = Exposure.NONE
    elif attempt.tool_activity:
        exposure = Exposure.TOOL_CALL
    elif attempt.output_seen or attempt.diagnostic is not None or found.is_transient:
        # A transient failure that may not be replayed (stale evidence, a visible diagnostic)
        # must not look clean to the policy.
        exposure = Exposure.CONTENT
    else:
        exposure = Exposure.NONE
    # replace, not a field-by-field copy: a copy silently drops any field it forgets.
    return replace(evidence, exposure=exposure)


def _signature_only_in_data(terminal: TerminalError, found: Classification) -> bool:
    """Whether ``data`` held a transient signature the message lacked: a reason, nothing more."""
    if terminal.data is None or found.is_transient:
        return False
    text = "\n".join(_strings_in(terminal.data, depth=3))
    return bool(text) and classify(Evidence(source=terminal.source, excerpt=text)).is_transient


def _strings_in(value: Any, *, depth: int) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif depth > 0 and isinstance(value, dict):
        for item in list(value.values())[:_DATA_TEXT_LIMIT]:
            yield from _strings_in(item, depth=depth - 1)
    elif depth > 0 and isinstance(value, list):
        for item in value[:_DATA_TEXT_LIMIT]:
            yield from _strings_in(item, depth=depth - 1)
