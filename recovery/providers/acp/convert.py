"""ACP ``session/update`` payloads -> neutral events. The one place the diagnostic marker is set.

Conversion reads the raw JSON-RPC params (not the SDK's models) because the SDK's models drop
members they do not know, and the Codex retry evidence lives in exactly such a member.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from recovery.classify import classify
from recovery.providers.acp.events import (
    AgentEvent,
    AgentText,
    AgentThought,
    AgentToolCall,
    AgentToolCallUpdate,
    ModelSettled,
    ResponseAttemptBoundary,
)
from recovery.providers.acp.metadata import allowed_identity
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
    update: Mapping[str, Any], *, redact_chunks: bool = True
) -> tuple[AgentEvent, ...]:
    """The events one ``session/update`` carries; unknown or malformed updates carry none.

    ``redact_chunks=False`` leaves ordinary (non-diagnostic) message and thought chunks as the
    agent sent them, for a caller that redacts them as a stream (``OutputRedactor``): a secret
    split across chunks is only recognisable there.
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
    if kind == "session_info_update" and is_response_attempt_retry(update):
        return (ResponseAttemptBoundary(attempt=0),)  # numbered by the stream shaper
    return ()


def is_response_attempt_retry(update: Mapping[str, Any]) -> bool:
    """Exact structured evidence that the provider abandoned its response and will regenerate.

    Codex: the update's ``error`` says ``willRetry: true`` and names a disconnected response
    stream (an object). ``willRetry: false``, a missing or non-object ``codexErrorInfo`` entry and
    any other error are not a boundary: removing transcript rows on a guess would lose content.
    """
    error = update.get("error")
    if isinstance(error, Mapping) and error.get("willRetry") is True:
        info = error.get("codexErrorInfo")
        if isinstance(info, Mapping) and isinstance(
            info.get("responseStreamDisconnected"), Mapping
        ):
            return True
    meta = update.get("_meta")
    return isinstance(meta, Mapping) and meta.get(MOCK_RETRY_MARKER) is True


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
    # Provider diagnostics are the diagnostic tier (they may quote hosts, ids and paths);
    # ordinary answers keep their paths and lose only credentials.
    if diagnostic:
        text = redact_diagnostic(raw)
    else:
        text = redact_credentials(raw) if redact else raw
    if kind == "agent_message_chunk":
        return (AgentText(text=text, diagnostic=diagnostic),)
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
        ),
    )


def _tool_call_update(update: Mapping[str, Any]) -> tuple[AgentEvent, ...]:
    tool_id = update.get("toolCallId")
    if not isinstance(tool_id, str) or not tool_id:
        return ()
    status = update.get("status")
    return (
        AgentToolCallUpdate(
            id=tool_id,
            status=status if isinstance(status, str) else None,
            content=redact_credentials("\n".join(_content_texts(update.get("content")))),
        ),
    )


def _content_texts(content: Any) -> Iterable[str]:
    if not isinstance(content, list):
        return
    for item in content:
        inner = item.get("content") if isinstance(item, Mapping) else None
        if isinstance(inner, Mapping) and inner.get("type") == "text":
            text = inner.get("text")
            if isinstance(text, str) and text:
                yield text


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""
