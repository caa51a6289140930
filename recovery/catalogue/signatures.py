"""Signature shapes that a single regular expression states badly, and timing hints in text."""

from __future__ import annotations

import ast
import enum
import json
import re
from dataclasses import dataclass
from typing import Any

CURSOR_PREFIX = "error: retriableerror:"
CURSOR_SUFFIX_LIMIT_BYTES = 256

# Cursor's bare resource-exhausted frame: transient, but a code of its own (the provider's
# resources, not the transport).
_CURSOR_EXHAUSTED_SUFFIX = re.compile(r"\[resource_exhausted\] Error", re.IGNORECASE)


def cursor_retriable_suffix(line: str) -> str | None:
    """The suffix of a Cursor ``Error: RetriableError:`` frame, or None when it is not one.

    The prefix must open the trimmed line (prose before it is an agent talking about an error),
    and the suffix must be non-empty and at most 256 UTF-8 bytes (a longer one is not a frame).
    """
    trimmed = line.strip()
    if trimmed[: len(CURSOR_PREFIX)].lower() != CURSOR_PREFIX:
        return None
    suffix = trimmed[len(CURSOR_PREFIX) :].strip()
    if not suffix or len(suffix.encode("utf-8")) > CURSOR_SUFFIX_LIMIT_BYTES:
        return None
    return suffix


class CursorFrame(enum.StrEnum):
    """What a Cursor ``Error: RetriableError:`` frame's suffix says."""

    TRANSPORT = "transport"  # any other suffix: the agent's connection failed (AC .12, .14)
    EXHAUSTED = "exhausted"  # exactly "[resource_exhausted] Error"
    QUOTA = "quota"  # a spent quota behind the same prefix: not transient
    AUTH = "auth"  # a refused credential behind the same prefix: not transient


def cursor_frame(line: str) -> CursorFrame | None:
    """The kind of Cursor frame ``line`` is, or None when it is not one (the cancellation veto
    is applied by the callers alike: the catalogue's rules and the stream shaper)."""
    suffix = cursor_retriable_suffix(line)
    if suffix is None:
        return None
    if suffix[:1] == "[":  # Cursor's bracketed status words; only they name a hard cause
        if _CURSOR_EXHAUSTED_SUFFIX.fullmatch(suffix):
            return CursorFrame.EXHAUSTED
        if _CURSOR_QUOTA_SUFFIX.match(suffix):
            return CursorFrame.QUOTA
        if _CURSOR_AUTH_SUFFIX.match(suffix):
            return CursorFrame.AUTH
    return CursorFrame.TRANSPORT


def is_cursor_transport_frame(line: str) -> bool:
    return cursor_frame(line) is CursorFrame.TRANSPORT


def is_cursor_exhausted_frame(line: str) -> bool:
    return cursor_frame(line) is CursorFrame.EXHAUSTED


def is_cursor_quota_frame(line: str) -> bool:
    return cursor_frame(line) is CursorFrame.QUOTA


def is_cursor_auth_frame(line: str) -> bool:
    return cursor_frame(line) is CursorFrame.AUTH


def is_cursor_retriable_frame(line: str) -> bool:
    """True for exactly the Cursor frames the catalogue treats as transient: any suffix the AC
    admits except the ones that name a spent quota or a refused credential."""
    return cursor_frame(line) in (CursorFrame.TRANSPORT, CursorFrame.EXHAUSTED)


_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_AMOUNT = r"\d{1,6}(?:\.\d{1,3})?"
_WORD_UNIT = r"(?:ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?)\b"
# Provider phrasings only ("Your limit will reset in 3 hours", OpenAI's and Groq's "Please try
# again in 20s" or "in 7m12s", Codex's "try again in 3 days 4 hours"); a bare "in 3 hours"
# elsewhere in a line is not a reset hint.
_RESET_IN = re.compile(
    rf"(?:(?:limit|quota) will reset in|(?:Please|or) try again in|(?:^|[.:] )Try again in) "
    rf"((?:{_AMOUNT} ?{_WORD_UNIT}(?:,? (?:and )?)?){{1,4}}"
    rf"|(?:{_AMOUNT}(?:ms|h|m|s)){{1,4}}\b)",
    re.IGNORECASE,
)
_DURATION_PART = re.compile(rf"({_AMOUNT}) ?([a-z]+)", re.IGNORECASE)


def reset_hint_ms_in(lines: tuple[str, ...]) -> int | None:
    """The longest provider-stated reset delay found in ``lines``, in milliseconds."""
    best: int | None = None
    for line in lines:
        for found in _RESET_IN.finditer(line):
            value = 0
            for amount, unit in _DURATION_PART.findall(found.group(1)):
                unit = unit.lower()
                unit_key = "ms" if unit.startswith(("ms", "milli")) else unit[0]
                value += int(float(amount) * _UNIT_MS[unit_key])
            best = value if best is None else max(best, value)
    return best


# ---- Cursor frames whose suffix names a cause waiting cannot fix ------------------------------
# Any other non-empty suffix within the byte bound is a transport frame (AC .12 / .14); these
# name a spent quota or a refused credential in Cursor's own bracketed status words.
_CURSOR_QUOTA_SUFFIX = re.compile(r"\[resource_exhausted\]\s*(?:.*\b)?quota\b", re.IGNORECASE)
_CURSOR_AUTH_SUFFIX = re.compile(
    r"\[(?:unavailable|unauthenticated|permission_denied|resource_exhausted)\]\s*"
    r"(?:authentication required|invalid api key|unauthenticated|unauthorized)\b",
    re.IGNORECASE,
)


# ---- Google error details --------------------------------------------------------------------
_GOOGLE_TOKEN = re.compile(r"[A-Z][A-Z0-9_]{1,63}")
_QUOTA_ID = re.compile(r"[A-Za-z0-9_.-]{1,128}")


def google_detail_codes(details: object) -> set[str]:
    """Tokens for what a google.rpc ``details`` list says: an ErrorInfo ``reason`` in lower case
    (``api_key_invalid``, ``billing_disabled``) and, from a QuotaFailure, the period of each
    violated quota (``google.quota.per_day``, ``google.quota.per_minute``).

    Google answers a spent daily quota and a per-minute limit with the same 429 and the same
    sentence; only the violated quota's id says which one it was."""
    codes: set[str] = set()
    if not isinstance(details, list):
        return codes
    for detail in details[:8]:
        if not isinstance(detail, dict):
            continue
        reason = detail.get("reason")
        if isinstance(reason, str) and _GOOGLE_TOKEN.fullmatch(reason):
            codes.add(reason.lower())
        violations = detail.get("violations")
        if not isinstance(violations, list):
            continue
        for violation in violations[:8]:
            quota_id = violation.get("quotaId") if isinstance(violation, dict) else None
            if isinstance(quota_id, str) and _QUOTA_ID.fullmatch(quota_id):
                if "PerDay" in quota_id:
                    codes.add("google.quota.per_day")
                elif "PerMinute" in quota_id:
                    codes.add("google.quota.per_minute")
    return codes


# ---- errors relayed as one line by an agent or an SDK ----------------------------------------
_RELAY_LIMIT_CHARS = 4096
# Claude Code: "API Error: 400 {json body}" (ACP adds "Internal error: ").
_CLAUDE_RELAY = re.compile(r"(?:Internal error: )?API Error: ([1-5]\d\d) (\{.*\})$")
# The Python SDKs (anthropic, openai, groq, ...) raise "<module>.<Name>Error: Error code: NNN -
# {repr of the body}" as the last line of a traceback.
_PYTHON_SDK_RELAY = re.compile(
    r"(?:[a-z_][a-z0-9_]*\.)+[A-Z]\w{0,63}Error: Error code: ([1-5]\d\d) - (\{.*\})$"
)
# botocore: "botocore.errorfactory.ThrottlingException: An error occurred (ThrottlingException)
# when calling the Converse operation (reached max retries: 4): message".
_BOTOCORE_RELAY = re.compile(
    r"botocore\.(?:errorfactory|exceptions)\.\w{1,64}: An error occurred \((\w{1,64})\) "
    r"when calling the \w{1,64} operation(?: \(reached max retries: \d{1,3}\))?: (.+)$"
)
# google-genai: "google.genai.errors.ServerError: 503 UNAVAILABLE. {repr}"; google-api-core:
# "google.api_core.exceptions.ResourceExhausted: 429 message".
_GOOGLE_GENAI_RELAY = re.compile(
    r"google\.genai\.errors\.(?:ClientError|ServerError|APIError): ([1-5]\d\d) [A-Z_]{1,40}\. "
    r"(\{.*\})$"
)
_GOOGLE_API_CORE_RELAY = re.compile(r"google\.api_core\.exceptions\.\w{1,64}: ([1-5]\d\d) (.+)$")
# Lower-case literals one of which every relayed line contains: the cheap test before the regexes.
RELAY_NEEDLES = ("api error:", "error code: ", "botocore.", "google.")


@dataclass(frozen=True, slots=True)
class Relayed:
    """An error response an agent or SDK printed on one line: its status, body or type, text."""

    status: int | None
    body: dict[str, Any] | None  # the provider's error body, when the line carries one
    code: str | None  # an error type named outside a body (botocore's exception name)
    message: str  # the human text, when not inside ``body``


def relayed_error(line: str, *, python_reprs: bool) -> Relayed | None:
    """The error response ``line`` relays, or None. ``python_reprs``: whether SDK exception
    lines count (in an agent's stderr they do; in its answer they are someone's example)."""
    if len(line) > _RELAY_LIMIT_CHARS:
        return None
    found = _CLAUDE_RELAY.match(line)
    if found:
        # Only the Messages API's own envelope: a gateway's (OpenRouter's, LiteLLM's) relayed
        # through Claude Code has no captured fixture yet, and stays unclassified on purpose.
        body = _json_object(found.group(2))
        if body is None or body.get("type") != "error" or not isinstance(body.get("error"), dict):
            return None
        return Relayed(int(found.group(1)), body, None, "")
    if not python_reprs:
        return None
    found = _PYTHON_SDK_RELAY.match(line) or _GOOGLE_GENAI_RELAY.match(line)
    if found:
        body = _python_literal(found.group(2))
        return Relayed(int(found.group(1)), body, None, "") if body is not None else None
    found = _BOTOCORE_RELAY.match(line)
    if found:
        return Relayed(None, None, found.group(1).lower(), found.group(2))
    found = _GOOGLE_API_CORE_RELAY.match(line)
    if found:
        return Relayed(int(found.group(1)), None, None, found.group(2))
    return None


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _python_literal(text: str) -> dict[str, Any] | None:
    """A Python dict repr read as data only (``ast.literal_eval`` evaluates no code)."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
