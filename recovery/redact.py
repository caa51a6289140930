"""Two redaction tiers, both idempotent (redacting twice changes nothing more).

- Credential tier, for user text such as the prompt sent on every attempt: removes API keys,
  bearer tokens, Authorization headers, key/secret/password/token assignments, URL userinfo
  and GitHub tokens, and leaves everything else as the user wrote it. Unbounded.
- Diagnostic tier, for provider output before it is stored, logged or shown: the credential
  tier plus URL reduction (scheme and host only), internal ids, absolute paths and long opaque
  runs; then truncation on a UTF-8 boundary. Redaction happens first, so truncation can never
  keep the first half of a secret whose second half made it recognisable.

Every replacement is a bracketed marker that no pattern matches, which is what makes both tiers
idempotent.
"""

from __future__ import annotations

import re
from collections.abc import Callable

REDACTED = "[REDACTED]"
TRUNCATION_MARK = "…"

_Sub = tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]

# A value that an earlier pass already replaced (possibly followed by the truncation mark) is
# left alone, so a second pass cannot swallow what follows it.
_DONE = r"\[REDACTED\](?=…?(?:[\"'\r\n]|$))"

_SECRET_NAMES = (
    r"api[_-]?key|apikey|access[_-]?key(?:[_-]?id)?|secret(?:[_-]?access)?(?:[_-]?key)?"
    r"|client[_-]?secret|private[_-]?key|password|passwd|passphrase|pwd|token|access[_-]?token"
    r"|refresh[_-]?token|id[_-]?token|auth[_-]?token|session[_-]?token|credentials?|key"
)
# NAME (prefixed or not: OPENAI_API_KEY, x-api-key) optionally quoted, then = or :, then the value.
_ASSIGNMENT = re.compile(
    r"(?<![\w-])((?:[\w-]*[_-])?(?:" + _SECRET_NAMES + r"))(?![\w-])"
    r"(\"|')?(\s*[:=]\s*)(\"|')?"
    r"((?(4)(?:" + _DONE + r"|[^\"'\r\n]+)|(?:" + _DONE + r"|[^\s\"',;&}\]\[)]+)))",
    re.IGNORECASE,
)


def _assignment(match: re.Match[str]) -> str:
    name, close_quote, separator, open_quote = (
        match.group(1),
        match.group(2) or "",
        match.group(3),
        match.group(4) or "",
    )
    return f"{name}{close_quote}{separator}{open_quote}{REDACTED}"


_CREDENTIAL_SUBS: tuple[_Sub, ...] = (
    # Header values run to the end of the line or the closing quote: "Basic x", "Bearer y".
    (
        re.compile(
            r"(?<![\w-])((?:proxy-)?authorization)(\"|')?(\s*[:=]\s*)(\"|')?"
            r"((?(4)(?:" + _DONE + r"|[^\"'\r\n]+)|(?:" + _DONE + r"|[^\r\n\"']+)))",
            re.IGNORECASE,
        ),
        lambda m: f"{m.group(1)}{m.group(2) or ''}{m.group(3)}{m.group(4) or ''}{REDACTED}",
    ),
    (
        re.compile(r"\b(Bearer|Basic|Token)\s+[A-Za-z0-9\-._~+/]{8,}=*", re.IGNORECASE),
        rf"\1 {REDACTED}",
    ),
    (re.compile(r"(?<![A-Za-z0-9])sk-(?:ant-|proj-|or-|svcacct-)?[A-Za-z0-9_\-]{8,}"), REDACTED),
    (re.compile(r"(?<![A-Za-z0-9])(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{16,}"), REDACTED),
    (re.compile(r"(?<![A-Za-z0-9])github_pat_[A-Za-z0-9_]{16,}"), REDACTED),
    (re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Z])"), REDACTED),
    (re.compile(r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_\-]{30,}"), REDACTED),
    (re.compile(r"(?<![A-Za-z0-9])xox[abprs]-[A-Za-z0-9\-]{10,}"), REDACTED),
    # user:password@ in any URL, whatever the scheme (postgres://, redis://, https://).
    (re.compile(r"\b([a-z][a-z0-9+.\-]*://)[^/\s@\"'<>]+@", re.IGNORECASE), rf"\1{REDACTED}@"),
    (_ASSIGNMENT, _assignment),
)

_DIAGNOSTIC_SUBS: tuple[_Sub, ...] = (
    # Keep only scheme and host: paths and queries carry ids, tokens and signed parameters.
    (
        re.compile(r"\b([a-z][a-z0-9+.\-]*://)([^/\s?#\"'<>]+)[^\s\"'<>]*", re.IGNORECASE),
        r"\1\2",
    ),
    (
        re.compile(
            r"(?<![0-9A-Fa-f])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![0-9A-Fa-f])"
        ),
        "[UUID]",
    ),
    (
        re.compile(
            r"(?<![A-Za-z0-9])(req|msg|toolu|org|user|sess|call|run|chatcmpl|resp|file|batch)"
            r"[_-][A-Za-z0-9_-]{6,}"
        ),
        r"\1_[ID]",
    ),
    # Absolute POSIX, home-relative and Windows paths with at least two segments.
    (re.compile(r"(?<![\w.:/~])(?:~)?/(?:[\w.@+\-]+/)+[\w.@+\-]*"), "[PATH]"),
    (re.compile(r"(?<![\w])[A-Za-z]:\\(?:[\w.@+\- ]+\\)*[\w.@+\-]*"), "[PATH]"),
)

_OPAQUE_RUN = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/=_\-]{32,}")


def _opaque(match: re.Match[str]) -> str:
    # Long words and identifiers without digits are prose; base64 and hex runs carry digits.
    run = match.group(0)
    return "[OPAQUE]" if any(ch.isdigit() for ch in run) else run


_DIAGNOSTIC_TIER: tuple[_Sub, ...] = (*_CREDENTIAL_SUBS, *_DIAGNOSTIC_SUBS, (_OPAQUE_RUN, _opaque))

# One replacement can expose another (a marker ends a word, so a glued-on "sk-..." becomes a
# token of its own); passes repeat until nothing changes, which is what makes both tiers
# idempotent. Markers are never replaced, so this converges in two or three passes.
_MAX_PASSES = 6


def redact_credentials(text: str) -> str:
    return _until_stable(text, _CREDENTIAL_SUBS)


def redact_diagnostic(text: str, *, limit_bytes: int | None = 4096) -> str:
    text = _until_stable(text, _DIAGNOSTIC_TIER)
    if limit_bytes is None:
        return text
    # A cut can leave a fragment a pattern reads differently ('key="' + mark); re-redacting the
    # cut text until it is stable keeps the tier idempotent with the bound applied.
    for _ in range(_MAX_PASSES):
        cut = truncate_utf8(text, limit_bytes=limit_bytes)
        text = _until_stable(cut, _DIAGNOSTIC_TIER)
        if text == cut:
            break
    return truncate_utf8(text, limit_bytes=limit_bytes)


def _until_stable(text: str, subs: tuple[_Sub, ...]) -> str:
    for _ in range(_MAX_PASSES):
        before = text
        for pattern, replacement in subs:
            text = pattern.sub(replacement, text)
        if text == before:
            break
    return text


def truncate_utf8(text: str, *, limit_bytes: int) -> str:
    """At most ``limit_bytes`` of UTF-8, cut on a character boundary, marked when cut."""
    encoded = text.encode("utf-8")
    if len(encoded) <= limit_bytes:
        return text
    mark = TRUNCATION_MARK.encode("utf-8")
    if limit_bytes < len(mark):
        return encoded[:limit_bytes].decode("utf-8", errors="ignore")
    kept = encoded[: limit_bytes - len(mark)].decode("utf-8", errors="ignore")
    return _without_partial_marker(kept) + TRUNCATION_MARK


_MARKERS = (REDACTED, "[OPAQUE]", "[PATH]", "[UUID]", "[ID]")


def _without_partial_marker(text: str) -> str:
    # A marker cut in half ("[REDAC") would be mistaken for text by a later pass.
    start = text.rfind("[", -len(REDACTED))
    if start == -1:
        return text
    tail = text[start:]
    if any(marker.startswith(tail) and marker != tail for marker in _MARKERS):
        return text[:start]
    return text
