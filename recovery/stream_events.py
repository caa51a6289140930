"""The provider-neutral events a guarded model stream yields.

Adapters translate each provider's wire events into these; the app's agent loop only ever sees
these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
