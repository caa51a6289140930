"""Which text the app stores. One rule per kind of field, used by the services (so the web forms and
the JSON API refuse the same input with the same words) and published by the API schemas as a JSON
Schema ``pattern`` that says exactly what the check accepts.

- Names and titles (task and session titles, target names, token labels) are one line a person
  reads and trusts: no control characters (C0, DEL, C1), no line or paragraph separators, no
  byte-order mark and no bidirectional controls (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F,
  U+061C), which can make "Mock\u202egnp.exe" read as something else in a dropdown.
- Single-line settings (a target's model, base URL, key variable, command) follow the same
  character rule but may be empty.
- Prompt text may be anything a person can type or paste, code included (tabs, newlines, any
  script), except NUL, which PostgreSQL cannot store.

Every kind also refuses a lone surrogate (a JSON "\\ud800" without its pair), which is not text and
cannot be encoded to store or send. JSON Schema patterns cannot say that portably, so it is said
in the field descriptions instead; a generator never produces one from the schema.

What agents, tools and providers send is not refused but made storable (``storable_text``,
``storable_json``): a file an agent reads may hold NUL bytes, and the turn must go on. PostgreSQL
refuses NUL in text and ``\\u0000`` in jsonb, and a lone surrogate cannot be encoded as UTF-8 at
all, so each such character becomes U+FFFD (the replacement character). U+FFFD rather than a
visible "\\u0000" marker: it is what a UTF-8 decoder already shows for bytes that are not text
(stderr tails are decoded so), it cannot be mistaken for the six characters an agent may really
have printed, and it replaces one code point by one, so streamed offsets (``message.appended``
counts code points) stay what the writer counted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_BIDI_CONTROLS = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
NAME_FORBIDDEN = frozenset(
    chr(code)
    for code in [*range(0x00, 0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, 0xFEFF, *_BIDI_CONTROLS]
)
TEXT_FORBIDDEN = frozenset({"\x00"})
# What str.strip() removes: a value made only of these is blank.
_WHITESPACE = frozenset(c for c in map(chr, range(0x110000)) if c.isspace())


REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


def storable_text(value: str) -> str:
    """``value`` with every character PostgreSQL cannot store (NUL, a lone surrogate) replaced by
    U+FFFD, one for one. Ordinary text comes back unchanged (and is the same object)."""
    if "\x00" in value:
        value = value.replace("\x00", REPLACEMENT)
    if not value.isascii() and _lone_surrogate(value):
        value = _SURROGATE.sub(REPLACEMENT, value)
    return value


def storable_json(value: Any) -> Any:
    """A JSON-shaped value (dicts, lists, strings, numbers) with ``storable_text`` applied to every
    string in it, keys included: jsonb refuses ``\\u0000`` inside any string."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        return {storable_json(key): storable_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [storable_json(item) for item in value]
    return value


def _lone_surrogate(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _forbidden_found(value: str, forbidden: frozenset[str]) -> str | None:
    for char in value:
        if char in forbidden:
            return char
    return None


def single_line_problem(value: str) -> str | None:
    """Why ``value`` cannot be a one-line setting (empty is fine), or None when it can."""
    if _lone_surrogate(value):
        return "must be valid text (it contains a lone surrogate)"
    found = _forbidden_found(value, NAME_FORBIDDEN)
    if found is not None:
        return (
            "must not contain control or bidirectional-override characters "
            f"(found U+{ord(found):04X})"
        )
    return None


def name_problem(value: str) -> str | None:
    """Why ``value`` cannot be a name or title, or None when it can."""
    problem = single_line_problem(value)
    if problem is None and not value.strip():
        return "must not be empty"
    return problem


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be prompt text, or None when it can."""
    if _lone_surrogate(value):
        return "must be valid text (it contains a lone surrogate)"
    if "\x00" in value:
        return "must not contain NUL characters (U+0000)"
    if not value.strip():
        return "must not be empty"
    return None


def _char_class(chars: Iterable[str]) -> str:
    """Characters as a regex class body of \\uXXXX ranges (ECMA-262 and Python read it alike)."""
    codes = sorted(ord(c) for c in chars)
    parts: list[str] = []
    start = previous = codes[0]
    for code in [*codes[1:], None]:
        if code is not None and code == previous + 1:
            previous = code
            continue
        parts.append(
            f"\\u{start:04x}" if start == previous else f"\\u{start:04x}-\\u{previous:04x}"
        )
        if code is not None:
            start = previous = code
    return "".join(parts)


def _non_blank_pattern(forbidden: frozenset[str]) -> str:
    allowed_blank = _WHITESPACE - forbidden
    return (
        f"^[^{_char_class(forbidden)}]*"
        f"[^{_char_class(forbidden | allowed_blank)}]"
        f"[^{_char_class(forbidden)}]*$"
    )


NAME_PATTERN = _non_blank_pattern(NAME_FORBIDDEN)
SINGLE_LINE_PATTERN = f"^[^{_char_class(NAME_FORBIDDEN)}]*$"
TEXT_PATTERN = _non_blank_pattern(TEXT_FORBIDDEN)
