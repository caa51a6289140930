"""Decoding failures into Evidence: what the provider said, never what it means.

Every adapter raises ProviderFailure built here, so status, provider error type, Retry-After and
rate-limit reset headers are read the same way for every wire. Excerpts are always redacted
(diagnostic tier) and bounded; a JSON error body stays valid JSON so the classifier can read it.
Nothing here matches provider codes or phrases: an error the provider sent keeps ``Kind.UNKNOWN``
and the catalogue names it from its status, error type and text. ``kind`` is only ever what the
adapter itself observed (a timeout, a dropped connection, a cut or unreadable stream, a cancel).
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
import socket
import ssl
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any

from recovery.clock import Clock
from recovery.redact import redact_diagnostic
from recovery.taxonomy import (
    Evidence,
    Exposure,
    Kind,
    Phase,
    ProviderFailure,
    Source,
    http_status_of,
)

_STRING_LIMIT_BYTES = 512  # per JSON string value, so the whole excerpt stays under 4 KiB
# Redaction cost grows with its input and an excerpt keeps at most 4 KiB, so text beyond this is
# dropped before redacting. A credential cut at this edge keeps its prefix (sk-, Bearer, ghp_),
# which is what the credential patterns match, so the cut cannot expose a clear secret.
_REDACT_INPUT_CHARS = 16 * 1024


def _redactable_prefix(text: str) -> str:
    """At most _REDACT_INPUT_CHARS of ``text``, cut at whitespace so no token is split.

    Redacting a megabyte costs most of a second, so huge bodies are cut first; cutting inside a
    secret could leave a prefix too short for its pattern, so the partial last token is dropped.
    """
    if len(text) <= _REDACT_INPUT_CHARS:
        return text
    head = text[:_REDACT_INPUT_CHARS]
    cut = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    return head[:cut] if cut > 0 else ""


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
# No provider hint honestly asks for more than a monthly quota's reset; a larger one (a bug, a
# timestamp sent as seconds) is read as this, so a card never says "resets in 11574074 days".
HINT_LIMIT_MS = 30 * 86_400 * 1000


def status_failure(
    *,
    provider_id: str,
    model: str,
    status: int,
    headers: Mapping[str, str],
    body: bytes | str,
    clock: Clock,
) -> ProviderFailure:
    """An HTTP error response (any non-2xx): its status, error type, headers and body, unjudged."""
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    payload = _loads(text)
    code = provider_code_of(payload) or _amazon_error_type(headers)
    phase = Phase.AUTH if status in (401, 403) else Phase.HEADERS
    evidence = Evidence(
        source=Source.HTTP,
        excerpt=_excerpt(payload, text),
        phase=phase,
        status=status,
        retry_after_ms=retry_after_ms(headers, clock=clock),
        provider_code=code,
        provider_id=provider_id,
        model_id=model,
        reset_at_ms=reset_at_ms(headers, clock=clock),
        should_retry=should_retry(headers),
    )
    return ProviderFailure(evidence, f"HTTP {status} {code or ''}".strip())


def stream_error_failure(
    *, provider_id: str, model: str, payload: Any, status: int | None
) -> ProviderFailure:
    """An error object inside a 200 stream: judged by its body (by the catalogue), never the 200."""
    code = provider_code_of(payload)
    evidence = Evidence(
        source=Source.SSE,
        excerpt=_excerpt(payload, ""),
        phase=Phase.STREAM,
        status=status,
        provider_code=code,
        provider_id=provider_id,
        model_id=model,
    )
    return ProviderFailure(evidence, f"in-stream error {code or ''}".strip())


def wire_failure(
    *,
    provider_id: str,
    model: str,
    kind: Kind,
    phase: Phase,
    detail: str,
    source: Source = Source.SSE,
    excerpt: str = "",
) -> ProviderFailure:
    """Malformed or truncated streams, transport loss, timeouts, cancellation."""
    evidence = Evidence(
        source=source,
        excerpt=redact_diagnostic(_redactable_prefix(excerpt or detail)),
        phase=phase,
        kind=kind,
        provider_id=provider_id,
        model_id=model,
    )
    return ProviderFailure(evidence, detail)


# getaddrinfo's answers that mean "no such name" (glibc: EAI_NONAME, EAI_NODATA). EAI_AGAIN (the
# resolver did not answer in time) is weather and stays a network failure.
_NO_SUCH_NAME = frozenset(
    code for code in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", None)) if code is not None
)
_CHAIN_LIMIT = 8


def connection_failure(
    error: BaseException, *, provider_id: str, model: str, timed_out: bool
) -> ProviderFailure:
    """A request that never got a response: the cause the exception chain names, decoded.

    A certificate that does not verify, a host name that does not resolve, and a refusal at a
    host that is not this machine are set-up mistakes in the target (a wrong base URL, a proxy
    without a trusted certificate): they get kinds of their own so the catalogue can call them
    hard and the card can name them. A refusal on loopback (a local proxy still starting), a
    reset, a resolver that timed out and every other socket error stay plain network failures.
    """
    chain = _causes(error)
    kind, detail = Kind.TIMEOUT if timed_out else Kind.NETWORK, ""
    if not timed_out:
        kind, detail = _set_up_mistake(chain, host=_request_host(chain))
    name = type(error).__name__
    if not detail:
        detail = f"{'timed out' if timed_out else 'could not connect'}: {name}"
    evidence = Evidence(
        source=Source.HTTP,
        excerpt=redact_diagnostic(detail),
        phase=Phase.CONNECT,
        kind=kind,
        provider_id=provider_id,
        model_id=model,
    )
    return ProviderFailure(evidence, detail)


def _set_up_mistake(chain: list[BaseException], *, host: str | None) -> tuple[Kind, str]:
    for cause in chain:
        if isinstance(cause, ssl.SSLCertVerificationError):
            reason = cause.verify_message or cause.reason or "certificate verify failed"
            return Kind.CERTIFICATE, f"TLS certificate verification failed: {reason}"
        if isinstance(cause, socket.gaierror) and cause.errno in _NO_SUCH_NAME:
            return Kind.DNS, f"the base URL's host name does not resolve ({cause.strerror})"
        if isinstance(cause, ConnectionRefusedError) and host is not None and not _local(host):
            return Kind.REFUSED, "connection refused at the base URL's host and port"
    return Kind.NETWORK, ""


def _causes(error: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(chain) < _CHAIN_LIMIT and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _request_host(chain: list[BaseException]) -> str | None:
    """The host the failed request was for: the SDKs' and httpx's errors carry the request."""
    for cause in chain:
        try:
            request = cause.request  # type: ignore[attr-defined]
        except (AttributeError, RuntimeError):  # httpx raises RuntimeError when it has none
            continue
        host = getattr(getattr(request, "url", None), "host", None)
        if isinstance(host, str) and host:
            return host
    return None


def _local(host: str) -> bool:
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def stamped(
    failure: ProviderFailure, *, exposure: Exposure, terminal_seen: bool = False
) -> ProviderFailure:
    evidence = replace(failure.evidence, exposure=exposure, terminal_seen=terminal_seen)
    return ProviderFailure(evidence, failure.detail)


def provider_code_of(payload: Any) -> str | None:
    """The error type or code an Anthropic, OpenAI, OpenRouter or LiteLLM body names, as sent.

    OpenRouter puts an HTTP status in `error.code` and the upstream's own body in
    `error.metadata.raw`; LiteLLM puts the status in `error.code` as a string. A status is not an
    error code (the catalogue reads it from the excerpt), and what the upstream said wins over
    the gateway's wrapper, because it names the real cause. Recorded, never interpreted here."""
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict):
        return None
    raw_code = error.get("code")
    kind = error.get("type") if isinstance(error.get("type"), str) else None
    code = raw_code if isinstance(raw_code, str) and http_status_of(raw_code) is None else None
    upstream = _upstream_code(error.get("metadata"))
    return upstream or code or (kind if kind not in (None, "None", "error") else None)


_AMAZON_ERROR_TYPE = re.compile(r"[A-Za-z][A-Za-z0-9]{0,63}")


def _amazon_error_type(headers: Mapping[str, str]) -> str | None:
    """Bedrock names its error in ``x-amzn-ErrorType`` (``ThrottlingException:<namespace>``) and
    sends only ``{"message": ...}`` as the body."""
    raw = headers.get("x-amzn-errortype") or headers.get("x-amzn-ErrorType")
    if not isinstance(raw, str):
        return None
    name = raw.split(":", 1)[0].strip()
    return name if _AMAZON_ERROR_TYPE.fullmatch(name) else None


def _upstream_code(metadata: Any) -> str | None:
    if not isinstance(metadata, dict) or not isinstance(metadata.get("raw"), str):
        return None
    inner = _loads(metadata["raw"])
    if isinstance(inner, dict):
        found = inner.get("error")
        nested = found if isinstance(found, dict) else inner
        value = nested.get("type") or nested.get("code")
        return value if isinstance(value, str) and value != "error" else None
    return None


def should_retry(headers: Mapping[str, str]) -> bool | None:
    """The provider's own `x-should-retry` (both SDKs obey it): True, False, or None when absent
    or neither word."""
    raw = headers.get("x-should-retry")
    if raw is None:
        return None
    return {"true": True, "false": False}.get(raw.strip().lower())


def retry_after_ms(headers: Mapping[str, str], *, clock: Clock) -> int | None:
    """`retry-after-ms`, else `retry-after` as seconds or an HTTP date; None when absent or bad.
    Bounded by HINT_LIMIT_MS."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        value = _number(raw_ms)
        if value is not None:
            return min(int(value), HINT_LIMIT_MS)
    raw = headers.get("retry-after")
    if raw is None:
        return None
    seconds = _number(raw)
    if seconds is not None:
        return min(int(seconds * 1000), HINT_LIMIT_MS)
    try:
        when = parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return min(max(0, int((when.timestamp() - clock.now()) * 1000)), HINT_LIMIT_MS)


def reset_at_ms(headers: Mapping[str, str], *, clock: Clock) -> int | None:
    """Epoch ms when the exhausted limit resets (a hint; Retry-After stays authoritative).

    Prefer the limit whose `remaining` is 0, since that is the one that refused us; otherwise
    the earliest reset, because a later one may belong to a limit that still has room."""
    resets: list[tuple[bool, int]] = []
    for name, value in headers.items():
        lower = name.lower()
        if lower.startswith("anthropic-ratelimit-") and lower.endswith("-reset"):
            at = _rfc3339_ms(value)
            remaining = headers.get(lower[: -len("reset")] + "remaining")
        elif lower.startswith("x-ratelimit-reset-"):
            duration = _duration_ms(value)
            at = (
                None if duration is None else int(clock.now() * 1000) + min(duration, HINT_LIMIT_MS)
            )
            remaining = headers.get("x-ratelimit-remaining-" + lower[len("x-ratelimit-reset-") :])
        else:
            continue
        if at is not None:
            resets.append((remaining != "0", min(at, int(clock.now() * 1000) + HINT_LIMIT_MS)))
    return min(resets)[1] if resets else None


def _rfc3339_ms(value: str) -> int | None:
    try:
        return int(datetime.fromisoformat(value.strip()).timestamp() * 1000)
    except ValueError:
        return None


def _duration_ms(value: str) -> int | None:
    """Go-style durations OpenAI sends: `1s`, `6m0s`, `20ms`, `1h2m3.5s`."""
    text = value.strip()
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    scale = {"h": 3_600_000, "m": 60_000, "s": 1000, "ms": 1}
    return int(sum(float(n) * scale[u] for n, u in parts))


def _number(raw: str) -> float | None:
    try:
        value = float(raw.strip())
    except (ValueError, OverflowError):
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _excerpt(payload: Any, text: str) -> str:
    if isinstance(payload, dict):
        return redact_diagnostic(json.dumps(_bounded(payload, depth=0), ensure_ascii=False))
    return redact_diagnostic(_redactable_prefix(text))


def _bounded(value: Any, *, depth: int) -> Any:
    """Keep JSON shape, redact then cut each string: a 1 MB message must not hide the error type."""
    if depth > 6:
        return "…"
    if isinstance(value, str):
        return redact_diagnostic(_redactable_prefix(value), limit_bytes=_STRING_LIMIT_BYTES)
    if isinstance(value, dict):
        return {str(k)[:64]: _bounded(v, depth=depth + 1) for k, v in list(value.items())[:16]}
    if isinstance(value, list):
        return [_bounded(v, depth=depth + 1) for v in value[:8]]
    return value
