"""The one spelling of a mock scenario that survives real agents: `[[mock:NAME:ARG:ARG]]`
(or `[[mock NAME:ARG]]`) anywhere in the text. Shared by the mock provider and the mock ACP agent,
which each keep their own table of names."""

from __future__ import annotations

import re
from dataclasses import dataclass

MARKER = re.compile(r"\[\[\s*mock[:\s]\s*(?P<name>[a-z][a-z-]*)(?P<args>(?::[^\s:\]]+)*)\s*\]\]")
# The marker with the blanks around it, so taking it out leaves one space, not two.
_MARKER_SPACED = re.compile(r"[ \t]*" + MARKER.pattern + r"[ \t]*")


@dataclass(frozen=True, slots=True)
class Marker:
    name: str
    args: tuple[str, ...]
    rest: str  # the text with every marker taken out


def marker_args(raw: str) -> tuple[str, ...]:
    return tuple(a for a in raw.split(":") if a)


def marker_find(text: str) -> Marker | None:
    """The first marker in ``text``, or None."""
    found = MARKER.search(text)
    if found is None:
        return None
    rest = _MARKER_SPACED.sub(" ", text).strip()
    return Marker(found["name"], marker_args(found["args"]), rest)
