"""Credential-tier redaction of one prompt attempt's output as a stream, per channel.

Message and thought chunks go through one ``StreamRedactor`` each, so a key the agent streams
in 4-character chunks is removed like a key sent whole. A chunk's event carries only the text
released so far (possibly none, then no event); what is held is released, as its own event,
before any other event (another channel, a tool call, a response-attempt boundary) and at the
end of the prompt (``flush``), so the order of output never changes. Diagnostic chunks, Cursor
frames and tool titles and contents are whole units and are redacted as such: the catalogue's
formats when they were converted, the session's own key values here.
"""

from __future__ import annotations

from collections.abc import Iterable

from recovery.providers.acp.agent_events import (
    AgentEvent,
    AgentText,
    AgentThought,
    AgentToolCall,
    AgentToolCallUpdate,
)
from recovery.providers.acp.tool_content import tool_event_redacted
from recovery.redact import StreamRedactor


class OutputRedactor:
    def __init__(self, *, known_values: Iterable[str] = ()) -> None:
        values = tuple(known_values)
        self._known = values
        self._channels: dict[type, StreamRedactor] = {
            AgentText: StreamRedactor(known_values=values),
            AgentThought: StreamRedactor(known_values=values),
        }

    def events(self, raw: Iterable[AgentEvent]) -> list[AgentEvent]:
        out: list[AgentEvent] = []
        for event in raw:
            channel = type(event)
            if isinstance(event, AgentText | AgentThought) and not _whole_unit(event):
                out.extend(self._flush_except(channel))
                released = self._channels[channel].feed(event.text)
                if released:
                    out.append(type(event)(text=released))
                continue
            out.extend(self.flush())
            if isinstance(event, AgentToolCall | AgentToolCallUpdate):
                event = tool_event_redacted(event, known_values=self._known)
            out.append(event)
        return out

    def flush(self) -> list[AgentEvent]:
        return self._flush_except(None)

    def _flush_except(self, keep: type | None) -> list[AgentEvent]:
        out: list[AgentEvent] = []
        for channel, redactor in self._channels.items():
            if channel is keep or not redactor.held:
                continue
            if text := redactor.finish():
                out.append(channel(text=text))
        return out


def _whole_unit(event: AgentText | AgentThought) -> bool:
    return event.diagnostic or (isinstance(event, AgentText) and event.cursor_frame)
