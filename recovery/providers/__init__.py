"""Provider adapters and the one entry point the app calls: ``open_stream``.

    stream = open_stream(target, call, cancel=token)
    for event in stream:          # TextDelta | ThinkingDelta | ToolCall | Usage | TurnEnd
        ...
    # failures: ProviderFailure with Evidence (exposure stamped by the guard)

Adapters (and their SDK clients with their connection pools) are cached per target and
timeouts, so consecutive calls reuse connections.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from recovery.clock import Clock, SystemClock
from recovery.events import ModelCall
from recovery.providers.anthropic import AnthropicAdapter
from recovery.providers.base import ProviderAdapter, StreamTimeouts, TargetConfig
from recovery.providers.openai_compat import OpenAICompatAdapter

if TYPE_CHECKING:
    from recovery.guard import CancelToken, GuardedStream

__all__ = [
    "CancelToken",
    "GuardedStream",
    "StreamTimeouts",
    "TargetConfig",
    "adapter_for",
    "open_stream",
]

_ADAPTERS = {"anthropic": AnthropicAdapter, "mock": AnthropicAdapter, "openai": OpenAICompatAdapter}
_cache: dict[tuple[TargetConfig, StreamTimeouts], ProviderAdapter] = {}
_cache_lock = threading.Lock()
_CACHE_LIMIT = 64


def adapter_for(target: TargetConfig, *, timeouts: StreamTimeouts) -> ProviderAdapter:
    try:
        factory = _ADAPTERS[target.provider_id]
    except KeyError:
        raise ValueError(
            f"unknown provider {target.provider_id!r}; expected one of {sorted(_ADAPTERS)}"
        ) from None
    key = (target, timeouts)
    with _cache_lock:
        adapter = _cache.get(key)
        if adapter is None:
            if len(_cache) >= _CACHE_LIMIT:
                _cache.pop(next(iter(_cache))).close()
            adapter = _cache[key] = factory(target, timeouts=timeouts)
    return adapter


def open_stream(
    target: TargetConfig,
    call: ModelCall,
    *,
    cancel: CancelToken,
    clock: Clock | None = None,
    timeouts: StreamTimeouts | None = None,
) -> GuardedStream:
    """A guarded stream for one model call; the request is sent when iteration starts."""
    # Imported here: recovery.guard builds on this package's modules, so a top-level import
    # would be circular.
    from recovery.guard import GuardedStream

    clock = clock or SystemClock()
    timeouts = timeouts or StreamTimeouts()
    adapter = adapter_for(target, timeouts=timeouts)
    return GuardedStream(
        adapter=adapter, call=call, target=target, cancel=cancel, clock=clock, timeouts=timeouts
    )


def __getattr__(name: str) -> Any:
    if name in ("CancelToken", "GuardedStream"):
        from recovery import guard

        return getattr(guard, name)
    raise AttributeError(name)
