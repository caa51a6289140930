"""The mock server's memory: the request log, scripted scenarios, the attempt counters and a
redirect in force."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from aiohttp import web

from recovery.mock.conversations import AttemptBook

SCRIPT_FIELDS = ("conversation", "wire", "model", "path")
_CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key"}
)


def credential_fingerprint(secret: str) -> str:
    """What the request log shows for a credential: enough to compare, never the value."""
    return "sha256:" + hashlib.sha256(secret.encode()).hexdigest()[:16]


def recorded_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """A request's headers as logged: names lower-cased, credentials as fingerprints, so a test
    can check everything a client sent without the log ever holding a key."""
    recorded = {}
    for name, value in headers:
        name = name.lower()
        if name in _CREDENTIAL_HEADERS:
            scheme, _, token = value.partition(" ")
            value = (
                f"{scheme} {credential_fingerprint(token)}"
                if token
                else credential_fingerprint(value)
            )
        recorded[name] = value
    return recorded


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
    redirect: dict[str, Any] | None = None  # {"location": url, "status": 3xx} while in force

    def reset(self) -> None:
        self.attempts.reset()
        self.requests.clear()
        self.scripts.clear()
        self.redirect = None

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
