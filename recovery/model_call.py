"""The provider-neutral model call: the conversation so far, the tools offered, the limits.

Adapters translate a ``ModelCall`` into each provider's request body; the app builds one from
the committed transcript (``sessions_app.agent.transcript``). A ``ConversationTurn`` is one
speaker's share of that history, not the app's agent turn (``sessions_app.agent.turn.Turn``),
which is one run of a prompt generation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str


@dataclass(frozen=True, slots=True)
class ToolUsePart:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolResultPart:
    tool_call_id: str
    content: str
    is_error: bool = False


Part = TextPart | ToolUsePart | ToolResultPart


@dataclass(frozen=True, slots=True)
class ConversationTurn:
    role: Literal["user", "assistant"]
    parts: tuple[Part, ...]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ModelCall:
    model: str
    turns: tuple[ConversationTurn, ...]
    system: str = ""
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int = 4096
