"""A small, strict Server-Sent Events decoder (WHATWG framing) over raw response bytes.

The SDKs' own iterators hide pings and byte counts, both of which the guard needs, so the
adapters read the body themselves. Malformed UTF-8 is reported, never replaced silently.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    event: str | None
    data: str


class SSEDecodeError(ValueError):
    """The bytes were not valid UTF-8 text; the caller reports a malformed stream."""


class SSEDecoder:
    __slots__ = ("_buffer", "_pending_cr", "_text")

    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")(errors="strict")
        self._buffer = ""
        self._pending_cr = False

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        try:
            text = self._text.decode(chunk)
        except UnicodeDecodeError as error:
            raise SSEDecodeError(str(error)) from None
        if self._pending_cr:
            text = "\r" + text
            self._pending_cr = False
        if "\r" in text:
            if text.endswith("\r"):
                # A CR at a chunk edge may be the first half of CRLF: decide with the next chunk.
                text, self._pending_cr = text[:-1], True
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        self._buffer += text
        if "\n\n" not in self._buffer:
            return []
        *blocks, self._buffer = self._buffer.split("\n\n")
        return [event for block in blocks if (event := _parse_block(block)) is not None]

    def finish(self) -> list[ServerSentEvent]:
        """End of body. A held CR was a line end after all; an event still unterminated after it
        is dropped, as the spec says (the stream was cut)."""
        try:
            self._text.decode(b"", final=True)
        except UnicodeDecodeError as error:
            raise SSEDecodeError(str(error)) from None
        if not self._pending_cr:
            return []
        self._pending_cr = False
        self._buffer += "\n"
        if "\n\n" not in self._buffer:
            return []
        *blocks, self._buffer = self._buffer.split("\n\n")
        return [event for block in blocks if (event := _parse_block(block)) is not None]


def _parse_block(block: str) -> ServerSentEvent | None:
    event: str | None = None
    data: list[str] = []
    for line in block.split("\n"):
        if not line or line[0] == ":":
            continue  # blank or comment (OpenAI-compatible gateways ping with comments)
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
    if not data:
        # WHATWG: an event without data is not dispatched. `event: keepalive` alone is a gateway's
        # heartbeat; its bytes already told the guard the connection is alive.
        return None
    return ServerSentEvent(event, "\n".join(data))
