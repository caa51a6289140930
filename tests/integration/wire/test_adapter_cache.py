"""The adapter cache: adapters are reused, the least recently used go first, and one that is
evicted while a call still streams through it is closed only when that call ends.

The bug this pins: 200 Mock sessions (a base URL each) on one worker pushed the cache past its
limit, eviction closed clients that other threads were reading from, and 79 of 200 answers broke
mid-stream with "ReadError: [Errno 9] Bad file descriptor".
"""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from recovery import providers
from recovery.guard import CancelToken, open_stream
from recovery.providers import StreamTimeouts, TargetConfig, leased_adapter
from recovery.stream_events import TextDelta, TurnEnd

from .conftest import MockProvider, user_call


class _FakeAdapter:
    def __init__(self, target: TargetConfig, *, timeouts: StreamTimeouts) -> None:
        self.target = target
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


@pytest.fixture
def fake_cache(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(providers, "_ADAPTERS", {"fake": _FakeAdapter})
    monkeypatch.setattr(providers, "_cache", type(providers._cache)())
    monkeypatch.setattr(providers, "CACHE_LIMIT", 2)


def _target(n: int) -> TargetConfig:
    return TargetConfig("fake", f"http://127.0.0.1:1/conversations/c{n}", "m", "k", "fake")


def _lease(n: int):
    return leased_adapter(_target(n), timeouts=StreamTimeouts())


@pytest.mark.usefixtures("fake_cache")
def test_the_same_target_and_timeouts_share_one_adapter() -> None:
    with _lease(1) as first, _lease(1) as second:
        assert first is second
    with leased_adapter(_target(1), timeouts=StreamTimeouts(idle_s=7)) as other:
        assert other is not first


@pytest.mark.usefixtures("fake_cache")
def test_an_idle_evicted_adapter_is_closed_at_once() -> None:
    with _lease(1) as one:
        pass
    with _lease(2), _lease(3):
        assert one.closed == 1


@pytest.mark.usefixtures("fake_cache")
def test_an_adapter_evicted_mid_call_is_closed_when_its_last_call_ends() -> None:
    first = _lease(1)
    one = first.__enter__()
    with _lease(1):
        with _lease(2), _lease(3):  # the cache holds 2: target 1 is evicted while in use
            assert one.closed == 0
        assert one.closed == 0  # the outer call still streams through it
    first.__exit__(None, None, None)
    assert one.closed == 1
    with _lease(1) as again:  # asked for again: a fresh adapter, not the closed one
        assert again is not one and again.closed == 0


@pytest.mark.usefixtures("fake_cache")
def test_the_least_recently_used_adapter_goes_first() -> None:
    with _lease(1) as one:
        pass
    with _lease(2) as two:
        pass
    with _lease(1):  # used again: now 2 is the oldest
        pass
    with _lease(3):
        pass
    assert two.closed == 1 and one.closed == 0


@pytest.mark.usefixtures("fake_cache")
def test_an_unknown_provider_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown provider 'nope'"):
        with leased_adapter(replace(_target(1), provider_id="nope"), timeouts=StreamTimeouts()):
            pass


def test_streams_survive_their_adapters_being_evicted(
    mock_provider: MockProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twelve conversations stream at once through a cache of 3 over real HTTP: every one gets its
    whole answer, though each new target evicts one that is still streaming."""
    monkeypatch.setattr(providers, "CACHE_LIMIT", 3)
    monkeypatch.setattr(providers, "_cache", type(providers._cache)())
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def converse(n: int) -> None:
        base = mock_provider.target("anthropic")
        target = replace(base, base_url=mock_provider.base_url("anthropic", conversation=f"c{n}"))
        try:
            events = list(
                open_stream(target, user_call(f"/slow-stream:40 hi {n}"), cancel=CancelToken())
            )
        except BaseException as error:  # noqa: BLE001 - reported below with the others
            errors.append(error)
            return
        assert isinstance(events[-1], TurnEnd)
        results[n] = "".join(e.text for e in events if isinstance(e, TextDelta))

    threads = [threading.Thread(target=converse, args=(n,)) for n in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert len(results) == 12 and all(results.values())
    assert len(providers._cache) == 3
