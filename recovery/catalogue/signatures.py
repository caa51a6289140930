"""Signature shapes that a single regular expression states badly, and timing hints in text."""

from __future__ import annotations

import re

CURSOR_PREFIX = "error: retriableerror:"
CURSOR_SUFFIX_LIMIT_BYTES = 256

# Cursor's frames are transient only in these shapes; every other suffix (quota, auth, invalid
# key) reuses the same prefix for failures that retrying cannot fix.
_CANCELED = r"(?:\[canceled\]\s*)?"
_CANCELED_AFTER = r"(?:\s*\[canceled\])?"
_CURSOR_TRANSPORT_SUFFIX = re.compile(
    _CANCELED
    + r"(?:HTTP/2 stream closed with error code CANCEL \(0x8\)"
    + r"|\[unavailable\] PING timed out"
    + r"|Connection stalled)"
    + _CANCELED_AFTER,
    re.IGNORECASE,
)
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


def is_cursor_transport_frame(line: str) -> bool:
    suffix = cursor_retriable_suffix(line)
    return suffix is not None and _CURSOR_TRANSPORT_SUFFIX.fullmatch(suffix) is not None


def is_cursor_exhausted_frame(line: str) -> bool:
    suffix = cursor_retriable_suffix(line)
    return suffix is not None and _CURSOR_EXHAUSTED_SUFFIX.fullmatch(suffix) is not None


def is_cursor_retriable_frame(line: str) -> bool:
    """True for exactly the Cursor frames the catalogue treats as transient."""
    return is_cursor_transport_frame(line) or is_cursor_exhausted_frame(line)


_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
# Provider phrasings only ("Your limit will reset in 3 hours", OpenAI's "Please try again in
# 20s"); a bare "in 3 hours" elsewhere in a line is not a reset hint.
_RESET_IN = re.compile(
    r"(?:limit|quota) will reset in (\d{1,6}(?:\.\d{1,3})?) ?"
    r"(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?)\b"
    r"|Please try again in (\d{1,6}(?:\.\d{1,3})?) ?(ms|s|m|h)\b",
    re.IGNORECASE,
)


def reset_hint_ms_in(lines: tuple[str, ...]) -> int | None:
    """The longest provider-stated reset delay found in ``lines``, in milliseconds."""
    best: int | None = None
    for line in lines:
        for found in _RESET_IN.finditer(line):
            amount = found.group(1) or found.group(3)
            unit = (found.group(2) or found.group(4)).lower()
            unit_key = "ms" if unit.startswith(("ms", "milli")) else unit[0]
            value = int(float(amount) * _UNIT_MS[unit_key])
            best = value if best is None else max(best, value)
    return best
