"""Provider-neutral model calls and the events a guarded stream yields.

Adapters translate these to and from each provider's wire format; the app's agent loop only
ever sees these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

# ---- the request ---------------------------------------------------------------------------


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
class Turn:
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
    turns: tuple[Turn, ...]
    system: str = ""
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int = 4096


# ---- what a guarded stream yields ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A complete tool call: arguments fully assembled and parsed. Partial calls never escape."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """The provider's terminal event was seen: the only way a stream counts as finished."""

    stop_reason: str  # end_turn | tool_use | max_tokens | stop_sequence | content_filter
    usage: Usage = field(default_factory=Usage)


StreamEvent = TextDelta | ThinkingDelta | ToolCall | Usage | TurnEnd
