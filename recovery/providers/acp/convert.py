"""ACP ``session/update`` payloads -> neutral events. The one place the diagnostic marker is set.

Conversion reads the raw JSON-RPC params (not the SDK's models) because the SDK's models drop
members they do not know, and the Codex retry evidence lives in exactly such a member.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from recovery.classify import classify
from recovery.providers.acp.agent_events import (
    AgentEvent,
    AgentText,
    AgentThought,
    AgentToolCall,
    AgentToolCallUpdate,
    ModelSettled,
    ResponseAttemptBoundary,
)
from recovery.providers.acp.metadata import allowed_identity
from recovery.providers.acp.shaping import is_held_cursor_frame
from recovery.providers.acp.tool_content import block_texts, tool_blocks, tool_locations
from recovery.redact import redact_credentials, redact_diagnostic
from recovery.taxonomy import Classification, Code, Confidence, Evidence, Source

# Our mock agent's explicit "I abandoned this response attempt" marker, carried in _meta where
# ACP lets any agent put extension data.
MOCK_RETRY_MARKER = "kandev.dev/responseAttemptRetry"


def chunk_classification(text: str) -> Classification:
    return classify(Evidence(source=Source.ACP_CHUNK, excerpt=text))


def is_diagnostic_candidate(text: str) -> bool:
    """A chunk a provider would print for a failure it may recover from, by the catalogue alone."""
    if not text.strip():
        return False
    found = chunk_classification(text)
    return (
        found.code is not Code.UNCLASSIFIED
        and found.confidence is Confidence.HIGH
        and found.fallback_eligible
    )


def update_events(
    update: Mapping[str, Any], *, redact_chunks: bool = True, agent: str | None = None
) -> tuple[AgentEvent, ...]:
    """The events one ``session/update`` carries; unknown or malformed updates carry none.

    ``redact_chunks=False`` leaves ordinary (non-diagnostic) message and thought chunks as the
    agent sent them, for a caller that redacts them as a stream (``OutputRedactor``): a secret
    split across chunks is only recognisable there. ``agent`` is the agent's reported identity
    (``agentInfo.name``): only an adapter in ``BOUNDARY_EVIDENCE`` can mark a response-attempt
    boundary, and only with its own shape.
    """
    kind = update.get("sessionUpdate")
    if kind in ("agent_message_chunk", "agent_thought_chunk"):
        return _chunk_events(kind, update.get("content"), redact=redact_chunks)
    if kind == "tool_call":
        return _tool_call(update)
    if kind == "tool_call_update":
        return _tool_call_update(update)
    if kind == "config_option_update":
        model = settled_model(update.get("configOptions"))
        return (ModelSettled(model_id=model),) if model else ()
    if kind == "session_info_update" and is_response_attempt_retry(update, agent=agent):
        return (ResponseAttemptBoundary(attempt=0),)  # numbered by the stream shaper
    return ()


def _codex_will_retry(update: Mapping[str, Any]) -> bool:
    """Codex: the update's ``error`` says ``willRetry: true`` and names a disconnected response
    stream (an object). ``willRetry: false``, a missing or non-object ``codexErrorInfo`` entry and
    any other error are not a boundary: removing transcript rows on a guess would lose content."""
    error = update.get("error")
    if not isinstance(error, Mapping) or error.get("willRetry") is not True:
        return False
    info = error.get("codexErrorInfo")
    return isinstance(info, Mapping) and isinstance(info.get("responseStreamDisconnected"), Mapping)


def _mock_marker(update: Mapping[str, Any]) -> bool:
    meta = update.get("_meta")
    return isinstance(meta, Mapping) and meta.get(MOCK_RETRY_MARKER) is True


# The supported adapters (requirements AC .26), by the exact identity each reports, each with the
# one shape of retry evidence it sends. Another agent carrying the same members is not trusted:
# a boundary deletes transcript rows, so it is accepted only where the evidence is known.
BOUNDARY_EVIDENCE: Mapping[str, Callable[[Mapping[str, Any]], bool]] = {
    "codex-acp": _codex_will_retry,
    "kandev-mock-agent": _mock_marker,
}


def is_response_attempt_retry(update: Mapping[str, Any], *, agent: str | None) -> bool:
    """Exact structured evidence, from a supported adapter, that the provider abandoned its
    response and will regenerate it."""
    shape = BOUNDARY_EVIDENCE.get(agent or "")
    return shape is not None and shape(update)


def settled_model(config_options: Any) -> str | None:
    """The current value of the session's model selector, when the agent announced one."""
    if not isinstance(config_options, list):
        return None
    for option in config_options:
        if not isinstance(option, Mapping) or option.get("type") != "select":
            continue
        if option.get("category") == "model" or option.get("id") == "model":
            return allowed_identity(option.get("currentValue"))
    return None


def _chunk_events(kind: str, content: Any, *, redact: bool) -> tuple[AgentEvent, ...]:
    if not isinstance(content, Mapping) or content.get("type") != "text":
        return ()
    raw = content.get("text")
    if not isinstance(raw, str) or not raw:
        return ()
    diagnostic = is_diagnostic_candidate(raw)
    cursor_frame = kind == "agent_message_chunk" and is_held_cursor_frame(raw)
    # Provider diagnostics (and Cursor frames) are the diagnostic tier and whole units (they may
    # quote hosts, ids and paths); ordinary answers keep their paths and lose only credentials.
    if diagnostic or cursor_frame:
        text = redact_diagnostic(raw)
    else:
        text = redact_credentials(raw) if redact else raw
    if kind == "agent_message_chunk":
        return (AgentText(text=text, diagnostic=diagnostic, cursor_frame=cursor_frame),)
    return (AgentThought(text=text, diagnostic=diagnostic),)


def _tool_call(update: Mapping[str, Any]) -> tuple[AgentEvent, ...]:
    tool_id = update.get("toolCallId")
    if not isinstance(tool_id, str) or not tool_id:
        return ()
    return (
        AgentToolCall(
            id=tool_id,
            title=redact_credentials(_string(update.get("title"))),
            kind=_string(update.get("kind")) or "other",
            status=_string(update.get("status")) or "pending",
            blocks=tool_blocks(update.get("content")) or (),
            locations=tool_locations(update.get("locations")) or (),
        ),
    )


def _tool_call_update(update: Mapping[str, Any]) -> tuple[AgentEvent, ...]:
    tool_id = update.get("toolCallId")
    if not isinstance(tool_id, str) or not tool_id:
        return ()
    blocks = tool_blocks(update.get("content"))
    title, kind = update.get("title"), update.get("kind")
    return (
        AgentToolCallUpdate(
            id=tool_id,
            status=_optional(update.get("status")),
            content="\n".join(block_texts(blocks)),
            title=None if title is None else redact_credentials(_string(title)),
            kind=_optional(kind),
            blocks=blocks,
            locations=tool_locations(update.get("locations")),
        ),
    )


def _optional(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""
