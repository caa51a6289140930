"""What every provider adapter shares: the target it talks to, its timeouts, and its stream shape.

An adapter only decodes. It turns one ModelCall into one HTTP request and the response into
provider-neutral items; judging a failure and choosing what to do next belong to the classifier
and the policy, and holding output until it is safe to show belongs to the guard.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from recovery.clock import Clock
from recovery.model_call import ModelCall
from recovery.stream_events import StreamEvent


@dataclass(frozen=True, slots=True)
class TargetConfig:
    provider_id: str  # anthropic | openai | mock (mock speaks the Anthropic wire)
    base_url: str
    model: str
    api_key: str = field(repr=False)  # never in a repr, a log line or an exception message
    name: str = ""

    @property
    def label(self) -> str:
        return self.name or f"{self.provider_id}:{self.model}"


@dataclass(frozen=True, slots=True)
class StreamTimeouts:
    """Seconds. first_chunk: until the provider's first byte after the headers (a ping counts);
    idle: between any two reads, pings included; no_progress: until the first user-visible event
    and between later ones (thinking counts). See recovery/guard.py."""

    connect_s: float = 10.0
    first_chunk_s: float = 45.0
    idle_s: float = 90.0
    no_progress_s: float = 300.0
    write_s: float = 30.0

    def __post_init__(self) -> None:
        for name in ("connect_s", "first_chunk_s", "idle_s", "no_progress_s", "write_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")


@dataclass(frozen=True, slots=True)
class Metadata:
    """Wire activity that is not output (message start, a block opening, a ping, a role chunk).

    It proves the provider is alive but must never reach a viewer on its own."""

    name: str


WireItem = StreamEvent | Metadata

# Called by an adapter stream for every chunk of bytes read, so the guard can time idleness.
ByteObserver = Callable[[int], None]


class AdapterStream(Protocol):
    def items(self) -> Iterator[WireItem]: ...

    def close(self) -> None: ...


class ProviderAdapter(Protocol):
    provider_id: str

    def open(self, call: ModelCall, *, on_bytes: ByteObserver, clock: Clock) -> AdapterStream:
        """Send the request; return once response headers arrived. Raises ProviderFailure."""
        ...
