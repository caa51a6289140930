"""The provider-neutral script a scenario produces; each wire module renders it to bytes.

Keeping scenarios wire-neutral means one `/overloaded-after-text:1` means the same thing on the
Anthropic and the OpenAI wire, so characterization tests compare like with like.
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


@dataclass(frozen=True, slots=True)
class Fail:
    failure: Failure
    status: int = 0  # 0: the wire's usual status for this failure
    retry_after_s: int | None = None
    echoed: str = ""  # for ECHO_CREDENTIALS: the credential header as received


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
    | Finish
)


@dataclass(frozen=True, slots=True)
class Plan:
    steps: tuple[Step, ...]
    delta_delay_ms: int = 0  # pause between content deltas (slow-stream)

    @property
    def http_error(self) -> HttpError | None:
        first = self.steps[0] if self.steps else None
        return first if isinstance(first, HttpError) else None
