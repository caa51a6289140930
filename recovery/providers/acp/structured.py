"""Structured failure facts real agents put around a prompt error, projected through allowlists.

Two agents say what failed in a structured way the catalogue can key on, each in its own place:

- Codex answers every failure with JSON-RPC ``-32603 "Internal error"`` and puts a structured
  kind in ``data.codex_error_info``: a bare name (``"server_overloaded"``) or a one-key map whose
  value may carry ``http_status_code``. Its ``"other"`` kind says no more, so for it alone the
  first words of ``data.message`` are matched against a fixed table of Codex's own prefixes
  (``unexpected status 503 ...``, ``stream disconnected before completion: ...``) to a token.
  Only a kind from the allowlist and an integer HTTP status cross; ``data.message`` itself (it
  quotes URLs and provider text) never leaves the adapter.
- Gemini CLI uses the HTTP status as the JSON-RPC code. The message is its own sentence for a
  status it knows (503: ``The model is overloaded. Please try again later.``; 429: ``Resource has
  been exhausted (e.g. check quota).`` then ``Suggested retry after 3s.``, read as a Retry-After
  floor) or the raw Google error body for one it does not
  (``{"error":{"code":529,"message":"...","status":"UNAVAILABLE"}}``, taken when it names the same
  code). A cut response body is code 500 with the one word ``terminated``: that 500 is Gemini's
  default, not the provider's answer, so no status is taken from it. A turn it ends with
  ``end_turn`` although no model call finished is told by its result's usage record
  (``model_call_unfinished``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

CODEX_NAMESPACE = "codex."
# codex-protocol's CodexErrorInfo, serialised snake_case. Anything else is dropped.
CODEX_ERROR_KINDS = frozenset(
    {
        "context_window_exceeded",
        "usage_limit_exceeded",
        "server_overloaded",
        "http_connection_failed",
        "response_stream_connection_failed",
        "internal_server_error",
        "unauthorized",
        "bad_request",
        "sandbox_error",
        "response_stream_disconnected",
        "response_too_many_failed_attempts",
        "thread_rollback_failed",
        "other",
    }
)
# For "other" only: Codex's own message prefixes, each to a token (the status is its digits).
_CODEX_OTHER_PREFIXES = (
    # OpenAI's own sentence for an overload, as Codex quotes it after the status.
    (
        re.compile(
            r"unexpected status (?P<status>503|529)\b[^:]{0,40}: "
            r"The server is overloaded or not ready yet\."
        ),
        "server_overloaded",
    ),
    (re.compile(r"unexpected status (?P<status>[1-5][0-9]{2})\b"), "unexpected_status"),
    (re.compile(r"stream disconnected before completion: "), "stream_disconnected"),
    (re.compile(r"exceeded retry limit, last status: (?P<status>[1-5][0-9]{2})\b"), "retry_limit"),
)
_GOOGLE_STATUS = re.compile(r"[A-Z][A-Z_]{1,40}")
_SUGGESTED_RETRY = re.compile(r"^Suggested retry after (\d{1,5}(?:\.\d{1,3})?)s\.$", re.MULTILINE)
GEMINI_CUT_BODY = "terminated"
_MESSAGE_PROBE_CHARS = 200


@dataclass(frozen=True, slots=True)
class StructuredFailure:
    """What an agent said about a failure in structure, not prose: safe to store and classify."""

    # Allowlisted: "codex.server_overloaded", or a Google status in lower case ("unavailable").
    kind: str | None = None
    status: int | None = None  # the HTTP status the agent reports the provider answered
    excerpt: str | None = None  # a provider error body to classify instead of the JSON-RPC one
    retry_after_ms: int | None = None  # a wait the agent relayed from the provider


def codex_failure(data: Any) -> StructuredFailure | None:
    """The allowlisted projection of ``data.codex_error_info``; None when there is none."""
    if not isinstance(data, dict):
        return None
    info = data.get("codex_error_info")
    name, detail = _codex_kind(info)
    if name is None:
        return None
    status = _http_status(detail.get("http_status_code")) if isinstance(detail, dict) else None
    if name == "other":
        token, status = _codex_other(data.get("message"))
        return StructuredFailure(kind=CODEX_NAMESPACE + (token or "other"), status=status)
    return StructuredFailure(kind=CODEX_NAMESPACE + name, status=status)


def _codex_kind(info: Any) -> tuple[str | None, Any]:
    if isinstance(info, str):
        return (info, None) if info in CODEX_ERROR_KINDS else (None, None)
    if isinstance(info, dict) and len(info) == 1:
        ((name, detail),) = info.items()
        return (name, detail) if name in CODEX_ERROR_KINDS else (None, None)
    return None, None


def _codex_other(message: Any) -> tuple[str | None, int | None]:
    if not isinstance(message, str):
        return None, None
    probe = message[:_MESSAGE_PROBE_CHARS]
    for pattern, token in _CODEX_OTHER_PREFIXES:
        found = pattern.match(probe)
        if found is not None:
            status = found.groupdict().get("status")
            return token, int(status) if status else None
    return None, None


def gemini_failure(*, code: Any, message: str) -> StructuredFailure | None:
    """Gemini CLI's HTTP-status code and message; None for any other JSON-RPC error (a positive
    code is an HTTP status only in the 400-599 range)."""
    status = _http_status(code)
    if status is None or status < 400:
        return None
    text = message.strip()
    if text == GEMINI_CUT_BODY:
        return StructuredFailure(excerpt=text)
    body = _loads(text) if text.startswith("{") else None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and _http_status(error.get("code")) == status:
        google_status = error.get("status")
        if not (isinstance(google_status, str) and _GOOGLE_STATUS.fullmatch(google_status)):
            google_status = None
        found = error.get("message")
        message = found if isinstance(found, str) else ""
        excerpt: dict[str, Any] = {
            "error": {"code": status, "message": message, "status": google_status}
        }
        details = _google_details(error.get("details"))
        if details:
            excerpt["error"]["details"] = details
        return StructuredFailure(
            kind=google_status.lower() if google_status else None,
            status=status,
            excerpt=json.dumps(excerpt, ensure_ascii=False),
        )
    suggested = _SUGGESTED_RETRY.search(text)
    return StructuredFailure(
        status=status,
        excerpt=text,
        retry_after_ms=int(float(suggested.group(1)) * 1000) if suggested else None,
    )


_GOOGLE_REASON = re.compile(r"[A-Z][A-Z0-9_]{1,63}")
_GOOGLE_QUOTA_ID = re.compile(r"[A-Za-z0-9_.-]{1,128}")


def _google_details(details: Any) -> list[dict[str, Any]]:
    """The parts of google.rpc ``details`` that name a cause, and nothing else: an ErrorInfo
    ``reason`` (API_KEY_INVALID, BILLING_DISABLED) and a QuotaFailure's violated quota ids (they
    tell a per-day quota from a per-minute limit). Metadata, links and free text are dropped."""
    projected: list[dict[str, Any]] = []
    if not isinstance(details, list):
        return projected
    for detail in details[:8]:
        if not isinstance(detail, dict):
            continue
        reason = detail.get("reason")
        if isinstance(reason, str) and _GOOGLE_REASON.fullmatch(reason):
            projected.append({"reason": reason})
        violations = detail.get("violations")
        if isinstance(violations, list):
            ids = [
                {"quotaId": v["quotaId"]}
                for v in violations[:8]
                if isinstance(v, dict)
                and isinstance(v.get("quotaId"), str)
                and _GOOGLE_QUOTA_ID.fullmatch(v["quotaId"])
            ]
            if ids:
                projected.append({"violations": ids})
    return projected


def _http_status(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 100 <= value <= 599 else None


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def model_call_unfinished(meta: Any) -> bool:
    """Whether a prompt that ended with ``end_turn`` says no model call of it finished.

    Gemini CLI ends a turn whose stream carried an error event (or was cut) with ``end_turn``, as
    if it had answered. Its result's ``_meta.quota.model_usage`` lists the usage of every model
    call that finished; a turn that asked the model and got no finished call has an empty list.
    Only that exact shape counts: no ``_meta``, no ``quota`` or a non-list is no evidence.
    """
    if not isinstance(meta, dict):
        return False
    quota = meta.get("quota")
    return isinstance(quota, dict) and quota.get("model_usage") == []
