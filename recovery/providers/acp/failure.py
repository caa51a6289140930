"""How a prompt ends: completed, or failed with redacted evidence, allowlisted metadata and the
facts a whole-prompt replay is judged on. Builders for each way an ACP prompt can fail live here.

Nothing here judges the failure: ``recovery.judge.judge(evidence=failure.evidence,
replay=failure.replay_facts, ...)`` classifies it once and says whether the prompt may be sent
again. The one catalogue lookup here reads JSON-RPC ``data``, which must never leave the adapter,
to record whether it held a transient signature the message lacks (a reason, nothing more).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from recovery.classify import classify
from recovery.providers.acp.agent_events import Correlation
from recovery.providers.acp.evidence import AttemptEvidence
from recovery.providers.acp.metadata import PromptErrorMetadata, metadata_project
from recovery.providers.acp.structured import StructuredFailure, codex_failure, gemini_failure
from recovery.redact import redact_diagnostic
from recovery.replay import ReplayFacts
from recovery.taxonomy import (
    EXCERPT_LIMIT_BYTES,
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

    ``evidence.exposure`` is what the attempt showed: a tool (TOOL_CALL), output or evidence that
    belongs to another attempt (CONTENT), only a provider diagnostic (METADATA), nothing (NONE).
    Judge it with ``replay_facts``: the judge settles the exposure, and refuses an automatic
    whole-prompt retry unless the facts prove it safe.
    """

    evidence: Evidence
    replay_facts: ReplayFacts
    metadata: PromptErrorMetadata
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
    facts = ReplayFacts(
        current=correlation.can_authorise and attempt.correlation == correlation,
        tool_activity=attempt.tool_activity,
        output_seen=attempt.output_seen,
        diagnostic=attempt.diagnostic,
        message=message,
        signature_in_data=_transient_signature_in_data(terminal),
    )
    provider_code = str(metadata.jsonrpc_code) if metadata.jsonrpc_code is not None else None
    evidence = Evidence(
        source=terminal.source,
        excerpt=excerpt,
        phase=terminal.phase,
        kind=terminal.kind,
        status=structured.status,
        retry_after_ms=structured.retry_after_ms,
        provider_code=structured.kind or provider_code,
        exposure=_shown(facts),
        provider_id=metadata.provider_id,
        model_id=metadata.model_id,
        generation=correlation.generation,
    )
    return PromptFailure(
        evidence=evidence,
        replay_facts=facts,
        metadata=metadata,
        message=message,
        correlation=correlation,
        attempt=attempt,
    )


def _shown(facts: ReplayFacts) -> Exposure:
    """What the attempt put in front of the viewer, as far as the adapter can tell."""
    if facts.tool_activity:
        return Exposure.TOOL_CALL
    if facts.output_seen or not facts.current:
        return Exposure.CONTENT  # what another attempt's evidence hides may have been shown
    if facts.diagnostic is not None:
        return Exposure.METADATA  # a marked provider diagnostic: visible, but not the answer
    return Exposure.NONE


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


def _transient_signature_in_data(terminal: TerminalError) -> bool:
    """Whether ``data`` holds a signature the catalogue knows as transient; data stays here."""
    if terminal.data is None:
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
