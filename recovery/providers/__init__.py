"""Provider adapters: one per wire, each only decoding (see ``base.py``).

Adapters (and their SDK clients with their connection pools) are cached per target and
timeouts, so consecutive calls reuse connections. Callers open a call through the guard:
``recovery.guard.open_stream(target, call, cancel=token)``, which holds the adapter with
``leased_adapter`` for as long as the call streams.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from recovery.providers.anthropic import AnthropicAdapter
from recovery.providers.base import ProviderAdapter, StreamTimeouts, TargetConfig
from recovery.providers.openai_compat import OpenAICompatAdapter

__all__ = ["StreamTimeouts", "TargetConfig", "leased_adapter"]

_ADAPTERS: dict[str, Callable[..., ProviderAdapter]] = {
    "anthropic": AnthropicAdapter,
    "mock": AnthropicAdapter,
    "openai": OpenAICompatAdapter,
}
# Targets with their own client kept at once. A Mock target has a base URL per session, so a
# busy box cycles through many more than this; evicted clients are closed once idle.
CACHE_LIMIT = 256


@dataclass(slots=True)
class _Entry:
    adapter: ProviderAdapter
    calls: int = 0  # calls streaming through this adapter now
    evicted: bool = False


_cache: OrderedDict[tuple[TargetConfig, StreamTimeouts], _Entry] = OrderedDict()
_cache_lock = threading.Lock()


@contextmanager
def leased_adapter(target: TargetConfig, *, timeouts: StreamTimeouts) -> Iterator[ProviderAdapter]:
    """The target's adapter, held for one call.

    The cache keeps the most recently used adapters. Closing an adapter closes its client's
    pooled sockets, so one evicted while another thread still streams through it is closed only
    when that call ends: closing it at once broke the other call's read with EBADF (or, once
    the descriptor was reused, a read on somebody else's socket).
    """
    try:
        factory = _ADAPTERS[target.provider_id]
    except KeyError:
        raise ValueError(
            f"unknown provider {target.provider_id!r}; expected one of {sorted(_ADAPTERS)}"
        ) from None
    key = (target, timeouts)
    idle: list[_Entry] = []
    with _cache_lock:
        entry = _cache.get(key)
        if entry is None:
            entry = _cache[key] = _Entry(factory(target, timeouts=timeouts))
            while len(_cache) > CACHE_LIMIT:
                _, oldest = _cache.popitem(last=False)
                oldest.evicted = True
                if not oldest.calls:
                    idle.append(oldest)
        else:
            _cache.move_to_end(key)
        entry.calls += 1
    for old in idle:
        old.adapter.close()
    try:
        yield entry.adapter
    finally:
        with _cache_lock:
            entry.calls -= 1
            done = entry.evicted and not entry.calls
        if done:
            entry.adapter.close()
