"""Which conversation a request belongs to, and how far each conversation's scripts have played.

A conversation is named, in this order, by:

1. the base URL: `/conversations/{id}/...` in front of any wire's path
   (`http://127.0.0.1:8765/conversations/session-42/v1/messages`). Every agent lets its launcher
   set a base URL, so this reaches Claude Code, Codex and Gemini CLI alike;
2. the `X-Mock-Conversation` header (our own SDK calls; Claude via ANTHROPIC_CUSTOM_HEADERS,
   Codex via `http_headers` in its provider config);
3. otherwise the wire and the first user message: a retry re-sends the same history, so it lands
   in the same conversation. Agents' own session ids are deliberately not used: our worker starts
   a fresh agent process (and so a fresh agent session) for every attempt, and "529 twice, then
   success" must continue across those attempts.

Attempts are counted per conversation, scenario and model call (tool results seen), so a retry of
one call shares a counter and the call after a tool result starts afresh. When a scenario serves
the plan that ends its script, its counter is forgotten: the same prompt in the same (or a
content-identical) conversation plays the whole script again.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from recovery.mock.history import History

CONVERSATION_HEADER = "X-Mock-Conversation"
CONVERSATION_PREFIX = "/conversations/{conversation}"
MAX_ID_CHARS = 200


class Source:
    PATH = "path"
    HEADER = "header"
    CONTENT = "content"


@dataclass(frozen=True, slots=True)
class Conversation:
    id: str
    source: str


class BadConversationId(ValueError):
    pass


def _checked(conversation_id: str) -> str:
    if not conversation_id.strip() or len(conversation_id) > MAX_ID_CHARS:
        raise BadConversationId(
            f"a conversation id is 1 to {MAX_ID_CHARS} characters, not {len(conversation_id)}"
        )
    return conversation_id.strip()


def conversation_identify(
    *, from_path: str | None, from_header: str | None, wire: str, history: History
) -> Conversation:
    if from_path is not None:
        return Conversation(_checked(from_path), Source.PATH)
    if from_header is not None:
        return Conversation(_checked(from_header), Source.HEADER)
    digest = hashlib.sha256(f"{wire}\n{history.first_user_text}".encode()).hexdigest()[:12]
    return Conversation(f"{wire}-{digest}", Source.CONTENT)


AttemptKey = tuple[str, str, int]  # conversation id, scenario, tool results seen


class AttemptBook:
    """Attempts per conversation and scenario. Mutated only on the server's event loop."""

    def __init__(self) -> None:
        self._attempts: dict[AttemptKey, int] = {}

    def next_attempt(self, key: AttemptKey) -> int:
        self._attempts[key] = attempt = self._attempts.get(key, 0) + 1
        return attempt

    def script_played(self, key: AttemptKey) -> None:
        self._attempts.pop(key, None)

    def reset(self) -> None:
        self._attempts.clear()

    def describe(self) -> dict[str, dict[str, int]]:
        """Attempts still counting, by conversation, as `scenario` or `scenario@tool-results`."""
        described: dict[str, dict[str, int]] = {}
        for (conversation, scenario, tool_results), attempts in self._attempts.items():
            name = scenario if tool_results == 0 else f"{scenario}@{tool_results}"
            described.setdefault(conversation, {})[name] = attempts
        return described
