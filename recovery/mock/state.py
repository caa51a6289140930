"""The mock server's memory: the request log, scripted scenarios and the attempt counters."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from aiohttp import web

from recovery.mock.conversations import AttemptBook

SCRIPT_FIELDS = ("conversation", "wire", "model", "path")


@dataclass(frozen=True, slots=True)
class Script:
    """A scenario forced on every request matching all the given fields (None matches any)."""

    scenario: str
    conversation: str | None = None
    wire: str | None = None
    model: str | None = None
    path: str | None = None  # the wire's own path, without a /conversations/{id} prefix

    def matches(self, *, conversation: str, wire: str, model: str, path: str) -> bool:
        wanted = {"conversation": conversation, "wire": wire, "model": model, "path": path}
        return all(getattr(self, name) in (None, wanted[name]) for name in SCRIPT_FIELDS)

    def same_match(self, other: Script) -> bool:
        return all(getattr(self, name) == getattr(other, name) for name in SCRIPT_FIELDS)

    def describe(self) -> dict[str, str]:
        return {name: value for name, value in asdict(self).items() if value is not None}


@dataclass
class MockState:
    attempts: AttemptBook = field(default_factory=AttemptBook)
    requests: list[dict[str, Any]] = field(default_factory=list)
    scripts: list[Script] = field(default_factory=list)

    def reset(self) -> None:
        self.attempts.reset()
        self.requests.clear()
        self.scripts.clear()

    def script_set(self, script: Script) -> None:
        """A script with the same fields replaces the older one."""
        self.scripts = [s for s in self.scripts if not s.same_match(script)] + [script]

    def scripts_clear(self, *, conversation: str | None = None) -> None:
        self.scripts = [
            s for s in self.scripts if conversation is not None and s.conversation != conversation
        ]

    def scripted(self, *, conversation: str, wire: str, model: str, path: str) -> str | None:
        """The newest matching script's scenario, or None."""
        for script in reversed(self.scripts):
            if script.matches(conversation=conversation, wire=wire, model=model, path=path):
                return script.scenario
        return None

    def log(self, **entry: Any) -> dict[str, Any]:
        logged = {"id": len(self.requests) + 1, **entry}
        self.requests.append(logged)
        return logged


STATE_KEY = web.AppKey("mock_state", MockState)
