"""The provider-neutral script a scenario produces; each wire module renders it to bytes.

Keeping scenarios wire-neutral means one `overloaded-after-text:1` means the same thing on the
Anthropic, OpenAI Chat, OpenAI Responses and Gemini wires, so characterization tests compare like
with like.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Failure(enum.StrEnum):
    OVERLOADED = "overloaded"
    RATE_LIMITED = "rate_limited"
    SERVER_ERROR = "server_error"
    QUOTA = "quota"
    AUTH = "auth"
    HUGE = "huge"
    OPENROUTER = "openrouter"  # OpenRouter's gateway envelope
    LITELLM = "litellm"  # LiteLLM proxy's envelope
    ECHO_CREDENTIALS = "echo_credentials"  # a gateway quoting the request's credential back
    BAD_REQUEST = "bad_request"  # the request itself is wrong (the mock's own validation)
    NOT_FOUND = "not_found"  # no such method on this wire


@dataclass(frozen=True, slots=True)
class Fail:
    failure: Failure
    status: int = 0  # 0: the wire's usual status for this failure
    retry_after_s: int | None = None
    echoed: str = ""  # for ECHO_CREDENTIALS: the credential header as received
    message: str = ""  # for BAD_REQUEST and NOT_FOUND: what is wrong, in plain words


@dataclass(frozen=True, slots=True)
class HttpError:
    fail: Fail


@dataclass(frozen=True, slots=True)
class Start:
    pass


@dataclass(frozen=True, slots=True)
class Text:
    chunks: tuple[str, ...]
    complete: bool = True


@dataclass(frozen=True, slots=True)
class Thinking:
    chunks: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Tool:
    id: str
    name: str
    argument_chunks: tuple[str, ...]
    complete: bool = True
    # A freeform ("custom") tool's input is plain text, not JSON arguments: the OpenAI Responses
    # wire sends it as a custom_tool_call (Codex's apply_patch takes the patch that way).
    freeform: bool = False


@dataclass(frozen=True, slots=True)
class Ping:
    pass


@dataclass(frozen=True, slots=True)
class Delay:
    ms: int


@dataclass(frozen=True, slots=True)
class StreamError:
    fail: Fail


@dataclass(frozen=True, slots=True)
class Malformed:
    pass


@dataclass(frozen=True, slots=True)
class Drop:
    """Abort the TCP connection without a clean end of the response."""


@dataclass(frozen=True, slots=True)
class RawBody:
    """A recorded response body sent as-is with status 200 (a wire fixture): the decoding cases
    no scenario renders (a gateway's keepalive events, a JSON body where a stream was asked)."""

    data: bytes
    content_type: str


@dataclass(frozen=True, slots=True)
class Finish:
    stop_reason: str  # end_turn | tool_use | max_tokens


Step = (
    HttpError
    | Start
    | Text
    | Thinking
    | Tool
    | Ping
    | Delay
    | StreamError
    | Malformed
    | Drop
    | RawBody
    | Finish
)


Emitted = bytes | Delay | Drop  # what a wire renderer yields: bytes to send, a pause, a cut


@dataclass(frozen=True, slots=True)
class Plan:
    steps: tuple[Step, ...]
    delta_delay_ms: int = 0  # pause between content deltas (slow-stream)
    # False while the script still has attempts to play (a failure before the scripted success);
    # once a final plan is served, the conversation's counter for the scenario starts over.
    final: bool = True

    @property
    def http_error(self) -> HttpError | None:
        first = self.steps[0] if self.steps else None
        return first if isinstance(first, HttpError) else None

    @property
    def raw_body(self) -> RawBody | None:
        first = self.steps[0] if self.steps else None
        return first if isinstance(first, RawBody) else None


@dataclass(frozen=True, slots=True)
class Reply:
    """What every wire needs to know to render a plan for one request."""

    model: str
    input_tokens: int
    message_id: str
    include_usage: bool = False  # OpenAI Chat: stream_options.include_usage
