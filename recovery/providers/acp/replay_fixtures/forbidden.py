"""The identifier shapes no replay fixture payload may contain. This list is the definition.

Each shape is named so a failing scan says what it found, never the value itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

FORBIDDEN_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # Provider and platform keys by their published prefixes.
    (
        "credential",
        re.compile(
            r"(?<![A-Za-z0-9])(?:sk-(?:ant-|proj-|or-|svcacct-)?[A-Za-z0-9_\-]{8,}"
            r"|(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{16,}"
            r"|(?:AKIA|ASIA)[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{30,}|xox[abprs]-[A-Za-z0-9\-]{10,})"
        ),
    ),
    # A secret-named field with a value: api_key=..., "x-api-key": "...", password: ...
    (
        "credential assignment",
        re.compile(
            r"(?i)(?:api[_-]?key|secret|password|passwd|access[_-]?token|refresh[_-]?token"
            r"|auth[_-]?token|client[_-]?secret|private[_-]?key)[\"']?\s*[:=]\s*[\"']?[^\s\"',}]{4,}"
        ),
    ),
    ("bearer token", re.compile(r"(?i)\b(?:bearer|basic)\s+[A-Za-z0-9\-._~+/]{8,}=*")),
    ("authorization header", re.compile(r"(?i)\b(?:proxy-)?authorization\s*[:=]")),
    # Account and organisation identifiers: Anthropic/OpenAI org ids, named id fields.
    (
        "account or organisation id",
        re.compile(
            r"(?i)(?<![A-Za-z0-9])(?:org|acct|account|user)[-_](?=[A-Za-z0-9]*[0-9])[A-Za-z0-9]{6,}"
            r"|(?:organi[sz]ation|account|org|user)[_-]?id[\"']?\s*[:=]"
        ),
    ),
    ("url", re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://|\bwww\.[a-z0-9-]+\.")),
    (
        "absolute host path",
        re.compile(
            # two or more segments anywhere, one under a well-known root, home-relative, Windows
            r"(?<![\w.:/~])/[A-Za-z_][\w.@+\-]*/[\w.@+\-]+"
            r"|(?<![\w.:/~])/(?:home|Users|root|var|etc|tmp|opt|srv|mnt|private|usr|Volumes)\b"
            r"|(?<![\w])~/[\w.@+\-]+|(?<![\w])[A-Za-z]:\\[\w.@+\- ]+"
        ),
    ),
    ("email", re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}")),
    (
        "uuid",
        re.compile(
            r"(?i)(?<![0-9a-f])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![0-9a-f])"
        ),
    ),
)


def forbidden_shapes_in(value: Any) -> list[str]:
    """The names of the forbidden shapes found anywhere in ``value`` (keys and strings)."""
    found: list[str] = []
    for text in _strings(value):
        for name, pattern in FORBIDDEN_SHAPES:
            if name not in found and pattern.search(text):
                found.append(name)
    return found


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
