"""Provider adapters: one per wire, each only decoding (see ``base.py``).

Adapters (and their SDK clients with their connection pools) are cached per target and
timeouts, so consecutive calls reuse connections. Callers open a call through the guard:
``recovery.guard.open_stream(target, call, cancel=token)``.
"""

from __future__ import annotations

import threading

from recovery.providers.anthropic import AnthropicAdapter
from recovery.providers.base import ProviderAdapter, StreamTimeouts, TargetConfig
from recovery.providers.openai_compat import OpenAICompatAdapter

__all__ = ["StreamTimeouts", "TargetConfig", "adapter_for"]

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
