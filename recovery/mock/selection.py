"""Which scenario a request asks for: a marker in the person's latest text, or a control script.

Two spellings in the latest user text (see history.py for what "latest user text" means):

    [[mock:overloaded:2]] tell me a joke     the marker, anywhere in the text (also
    tell me a joke [[mock overloaded:2]]     `[[mock NAME:ARGS]]`); no agent rewrites it
    /overloaded:2 tell me a joke             the old leading command (tests, the ACP mock agent);
                                             Claude Code takes it as its own slash command

A marker naming no scenario is refused (UnknownScenario) so a typo shows instead of a plain
answer; a leading `/word` that is no scenario is ordinary text (a path, a shell command).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from recovery.mock.marker import MARKER, marker_args, marker_find
from recovery.mock.scenarios import SCENARIOS

_LEADING = re.compile(
    r"^\s*/(?P<name>[a-z][a-z-]*)(?P<args>(?::[^\s:]+)*)\s*(?P<rest>.*)$", re.DOTALL
)


class UnknownScenario(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(f"unknown mock scenario {name!r}; known: {', '.join(sorted(SCENARIOS))}")
        self.name = name


@dataclass(frozen=True, slots=True)
class Selection:
    name: str
    args: tuple[str, ...]
    prompt: str  # what the person asked, marker or command taken out

    @property
    def scenario(self) -> str:
        return ":".join((self.name, *self.args))


def selection_from_text(text: str) -> Selection:
    """The first marker anywhere in the text, else a leading command, else the plain answer."""
    marker = marker_find(text)
    if marker is not None:
        if marker.name not in SCENARIOS:
            raise UnknownScenario(marker.name)
        return Selection(marker.name, marker.args, marker.rest)
    leading = _LEADING.match(text)
    if leading is None or leading["name"] not in SCENARIOS:
        return Selection("plain", (), text.strip())
    return Selection(leading["name"], marker_args(leading["args"]), leading["rest"].strip())


def selection_from_script(spec: str, *, text: str) -> Selection:
    """A control script's scenario (`overloaded:2`, `/overloaded:2` or the marker), applied to
    the request's latest text (whose own marker, if any, is taken out of the prompt)."""
    spec = spec.strip().split(maxsplit=1)[0] if spec.strip() else ""
    marker = MARKER.fullmatch(spec)
    if marker is not None:
        name, raw_args = marker["name"], marker["args"]
    else:
        name, _, raw_args = spec.removeprefix("/").partition(":")
        raw_args = ":" + raw_args
    if name not in SCENARIOS:
        raise UnknownScenario(name)
    try:
        prompt = selection_from_text(text).prompt
    except UnknownScenario:
        prompt = text.strip()
    return Selection(name, marker_args(raw_args), prompt)
