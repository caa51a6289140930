"""Between conversion and consumers: Cursor frame hold-back and response-attempt boundaries.

Cursor prints ``Error: RetriableError: ...`` both when it is about to retry on its own and when
it gives up. A frame in the transient shape is therefore held while nothing follows it: if the
agent resumes generating, the frame was its own retry telemetry and is released as a visible,
marked diagnostic (it authorises nothing, because what follows is output or tool activity); if
the prompt ends with the frame still held, it becomes the prompt's one structured failure.

A response-attempt boundary reaches consumers only when the abandoned attempt produced output
since the last commit boundary (a tool call or the previous boundary): a repeated boundary with
nothing new in between would retract nothing, so it is a no-op here.
"""

from __future__ import annotations

from recovery.catalogue.model import CANCELLATION_WORDS
from recovery.catalogue.signatures import is_cursor_retriable_frame
from recovery.providers.acp.agent_events import (
    AgentEvent,
    AgentPermission,
    AgentText,
    AgentThought,
    AgentToolCall,
    AgentToolCallUpdate,
    ResponseAttemptBoundary,
)

# Events that show the agent is generating again, which makes a held frame stale telemetry.
_RESUMING = (AgentText, AgentThought, AgentToolCall, AgentToolCallUpdate, AgentPermission)


def is_cursor_agent(provider_id: str | None) -> bool:
    return provider_id is not None and "cursor" in provider_id.lower()


def is_held_cursor_frame(text: str) -> bool:
    trimmed = text.strip()
    return (
        "\n" not in trimmed
        and is_cursor_retriable_frame(trimmed)
        and CANCELLATION_WORDS.search(trimmed) is None
    )


class StreamShaper:
    """Per-prompt state: feed converted events in wire order, emit what consumers may see."""

    __slots__ = ("_boundaries", "_cursor", "_held", "_output_since_commit", "tool_kinds")

    def __init__(self, *, cursor_agent: bool) -> None:
        self._cursor = cursor_agent
        self._held: AgentText | None = None
        self._output_since_commit = False
        self._boundaries = 0
        self.tool_kinds: dict[str, str] = {}

    def feed(self, event: AgentEvent) -> list[AgentEvent]:
        out: list[AgentEvent] = []
        # Held by the frame's exact shape (AC .12, decided at conversion), not by the diagnostic
        # marker: a Cursor loss is not fallback-eligible and so never a diagnostic.
        if self._cursor and isinstance(event, AgentText) and event.cursor_frame:
            out += self._release()
            self._held = event
            return out
        if isinstance(event, _RESUMING):
            out += self._release()
        out += self._pass(event)
        return out

    def release_held(self) -> list[AgentEvent]:
        """Show a held frame (the prompt ended with an error of its own)."""
        return self._release()

    def take_held(self) -> str | None:
        """Consume a held frame as the prompt's failure; it is never shown."""
        held, self._held = self._held, None
        return held.text if held is not None else None

    def _release(self) -> list[AgentEvent]:
        if self._held is None:
            return []
        held, self._held = self._held, None
        return self._pass(held)  # unchanged: the marker is what conversion decided

    def _pass(self, event: AgentEvent) -> list[AgentEvent]:
        if isinstance(event, ResponseAttemptBoundary):
            if not self._output_since_commit:
                return []
            self._output_since_commit = False
            self._boundaries += 1
            return [ResponseAttemptBoundary(attempt=self._boundaries)]
        if isinstance(event, (AgentText, AgentThought)):
            self._output_since_commit = True
        elif isinstance(event, AgentToolCall):
            self._output_since_commit = False
            self.tool_kinds[event.id] = event.kind
        return [event]
