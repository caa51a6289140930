"""The guard's fence and watchdog over real HTTP: what is held, what times out, what gets closed."""

from __future__ import annotations

import threading
import time

import pytest

from recovery.clock import FakeClock
from recovery.guard import CancelToken, open_stream
from recovery.providers import StreamTimeouts
from recovery.stream_events import TextDelta, TurnEnd
from recovery.taxonomy import Exposure, Kind, ProviderFailure

from .conftest import MockProvider, user_call

WIRES = ["anthropic", "openai"]


def consume(stream) -> tuple[list, ProviderFailure | None]:
    events: list = []
    try:
        for event in stream:
            events.append(event)  # noqa: PERF402 - keeps what escaped before a failure
    except ProviderFailure as failure:
        return events, failure
    return events, None


@pytest.mark.parametrize("wire", WIRES)
def test_pings_keep_an_idle_timer_alive(mock_provider: MockProvider, wire: str) -> None:
    timeouts = StreamTimeouts(first_chunk_s=5, idle_s=0.3, no_progress_s=5)
    events, failure = consume(
        open_stream(
            mock_provider.target(wire),
            user_call("/ping-stall:900 hi"),
            cancel=CancelToken(),
            timeouts=timeouts,
        )
    )
    assert failure is None and isinstance(events[-1], TurnEnd)


@pytest.mark.parametrize("wire", WIRES)
def test_pings_keep_a_call_alive_past_the_first_chunk_timeout(
    mock_provider: MockProvider, wire: str
) -> None:
    # A reasoning model that pings for 1.2 s before answering: the 0.3 s first-chunk timeout
    # is met by the first ping, and no progress is allowed 5 s.
    timeouts = StreamTimeouts(first_chunk_s=0.3, idle_s=5, no_progress_s=5)
    events, failure = consume(
        open_stream(
            mock_provider.target(wire),
            user_call("/ping-stall:1200 hi"),
            cancel=CancelToken(),
            timeouts=timeouts,
        )
    )
    assert failure is None and isinstance(events[-1], TurnEnd)


@pytest.mark.parametrize("wire", WIRES)
def test_pings_without_any_output_are_cut_by_the_no_progress_timeout(
    mock_provider: MockProvider, wire: str
) -> None:
    timeouts = StreamTimeouts(first_chunk_s=0.3, idle_s=5, no_progress_s=0.8)
    stream = open_stream(
        mock_provider.target(wire),
        user_call("/ping-stall:3000 hi"),
        cancel=CancelToken(),
        timeouts=timeouts,
    )
    started = time.monotonic()
    events, failure = consume(stream)
    assert events == [] and failure.evidence.kind is Kind.TIMEOUT
    assert "no output within 0.8 s" in failure.detail
    assert failure.evidence.exposure is Exposure.METADATA
    assert 0.8 <= time.monotonic() - started < 0.8 + 1.5
    assert mock_provider.wait_for(lambda rs: rs[0]["disconnected"])[0]["disconnected"]


@pytest.mark.parametrize("wire", WIRES)
def test_a_provider_that_sends_nothing_is_cut_by_the_first_chunk_timeout(
    mock_provider: MockProvider, wire: str
) -> None:
    timeouts = StreamTimeouts(first_chunk_s=0.4, idle_s=5, no_progress_s=5)
    _, failure = consume(
        open_stream(
            mock_provider.target(wire),
            user_call("/slow-first-byte:3000 hi"),
            cancel=CancelToken(),
            timeouts=timeouts,
        )
    )
    assert failure.evidence.kind is Kind.TIMEOUT and "no response within 0.4 s" in failure.detail


@pytest.mark.parametrize("wire", WIRES)
def test_thinking_is_progress_before_the_answer(mock_provider: MockProvider, wire: str) -> None:
    timeouts = StreamTimeouts(first_chunk_s=5, idle_s=5, no_progress_s=5)
    events, failure = consume(
        open_stream(
            mock_provider.target(wire),
            user_call("/thinking why"),
            cancel=CancelToken(),
            timeouts=timeouts,
        )
    )
    assert failure is None and isinstance(events[-1], TurnEnd)


@pytest.mark.parametrize(
    "field", ["first_chunk_s", "idle_s", "no_progress_s", "connect_s", "write_s"]
)
@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf")])
def test_a_bad_timeout_is_refused_naming_it(field, value) -> None:
    with pytest.raises(ValueError, match=field):
        StreamTimeouts(**{field: value})


@pytest.mark.parametrize("wire", WIRES)
def test_silence_between_deltas_trips_the_idle_timeout(
    mock_provider: MockProvider, wire: str
) -> None:
    timeouts = StreamTimeouts(first_chunk_s=5, idle_s=0.3, no_progress_s=5)
    _, failure = consume(
        open_stream(
            mock_provider.target(wire),
            user_call("/slow-stream:2000 hi"),
            cancel=CancelToken(),
            timeouts=timeouts,
        )
    )
    assert failure.evidence.kind is Kind.TIMEOUT and "no bytes" in failure.detail


@pytest.mark.parametrize("wire", WIRES)
def test_pings_without_new_output_trip_the_no_progress_timeout(
    mock_provider: MockProvider, wire: str
) -> None:
    timeouts = StreamTimeouts(first_chunk_s=5, idle_s=5, no_progress_s=0.4)
    events, failure = consume(
        open_stream(
            mock_provider.target(wire),
            user_call("/stall-after-text:3000 hi"),
            cancel=CancelToken(),
            timeouts=timeouts,
        )
    )
    assert [e.text for e in events] == ["Thinking it ", "over... "]
    assert failure.evidence.kind is Kind.TIMEOUT and failure.evidence.exposure is Exposure.CONTENT
    assert mock_provider.wait_for(lambda rs: rs[0]["disconnected"])[0]["disconnected"]


def test_time_the_consumer_spends_on_an_event_is_not_provider_idleness(
    mock_provider: MockProvider,
) -> None:
    timeouts = StreamTimeouts(first_chunk_s=5, idle_s=0.2, no_progress_s=0.2)
    events = []
    for event in open_stream(
        mock_provider.target("anthropic"), user_call("hi"), cancel=CancelToken(), timeouts=timeouts
    ):
        if not events:
            time.sleep(0.35)  # a slow consumer: persisting, pushing to viewers
        events.append(event)
    assert isinstance(events[-1], TurnEnd)


def test_the_watchdog_follows_the_injected_clock(mock_provider: MockProvider) -> None:
    clock = FakeClock()
    stream = open_stream(
        mock_provider.target("anthropic"),
        user_call("/slow-first-byte:5000 hi"),
        cancel=CancelToken(),
        clock=clock,
    )  # default 45 s first-chunk timeout
    threading.Timer(0.2, clock.advance, args=(46,)).start()
    started = time.monotonic()
    _, failure = consume(stream)
    assert failure.evidence.kind is Kind.TIMEOUT and "45 s" in failure.detail
    assert time.monotonic() - started < 0.2 + 0.5


class WatchdogBreaksClock(FakeClock):
    """A clock that raises when the watchdog thread reads it while ``broken`` is set."""

    broken = False

    def monotonic(self) -> float:
        if self.broken and threading.current_thread().name == "guard-watchdog":
            raise RuntimeError("the clock is broken")
        return super().monotonic()


def test_a_guard_whose_check_raises_is_logged_once_and_still_watched(
    mock_provider: MockProvider, caplog: pytest.LogCaptureFixture
) -> None:
    clock = WatchdogBreaksClock()
    clock.broken = True
    stream = open_stream(
        mock_provider.target("anthropic"),
        user_call("/slow-first-byte:5000 hi"),
        cancel=CancelToken(),
        clock=clock,
    )

    def repair() -> None:  # after two or three of the watchdog's 0.25 s slices
        clock.broken = False
        clock.advance(46)

    threading.Timer(0.6, repair).start()
    _, failure = consume(stream)

    assert failure.evidence.kind is Kind.TIMEOUT and "45 s" in failure.detail
    failed = [r for r in caplog.records if r.getMessage() == "guard watchdog failed for one stream"]
    assert len(failed) == 1


@pytest.mark.parametrize("wire", WIRES)
def test_a_consumer_that_stops_early_closes_the_response(
    mock_provider: MockProvider, wire: str
) -> None:
    stream = open_stream(
        mock_provider.target(wire), user_call("/slow-stream:100 hi"), cancel=CancelToken()
    )
    iterator = iter(stream)
    assert isinstance(next(iterator), TextDelta)
    iterator.close()
    seen = mock_provider.wait_for(lambda rs: rs[0]["disconnected"])
    assert seen[0]["disconnected"] and not seen[0]["completed"]


def test_a_consumer_that_raises_still_closes_the_response(mock_provider: MockProvider) -> None:
    def explode() -> None:
        for _event in open_stream(
            mock_provider.target("anthropic"),
            user_call("/slow-stream:100 hi"),
            cancel=CancelToken(),
        ):
            raise LookupError("the consumer failed")

    with pytest.raises(LookupError):
        explode()
    assert mock_provider.wait_for(lambda rs: rs[0]["disconnected"])[0]["disconnected"]


def test_a_stream_cancelled_before_it_starts_sends_nothing(mock_provider: MockProvider) -> None:
    cancel = CancelToken()
    cancel.cancel()
    _, failure = consume(
        open_stream(mock_provider.target("anthropic"), user_call("hi"), cancel=cancel)
    )
    assert failure.evidence.kind is Kind.CANCELLED
    assert mock_provider.count() == 0


def test_cancel_mid_stream_keeps_what_escaped_and_stamps_its_exposure(
    mock_provider: MockProvider,
) -> None:
    cancel = CancelToken()
    events: list = []
    with pytest.raises(ProviderFailure) as raised:
        for event in open_stream(
            mock_provider.target("anthropic"), user_call("/slow-stream:100 hi"), cancel=cancel
        ):
            events.append(event)
            cancel.cancel()
    assert len(events) == 1 and raised.value.evidence.kind is Kind.CANCELLED
    assert raised.value.evidence.exposure is Exposure.CONTENT


def test_a_guarded_stream_is_iterated_only_once(mock_provider: MockProvider) -> None:
    stream = open_stream(mock_provider.target("anthropic"), user_call("hi"), cancel=CancelToken())
    list(stream)
    with pytest.raises(RuntimeError):
        iter(stream)


def test_a_cancel_token_runs_late_subscribers_at_once_and_forgets_unsubscribed_ones() -> None:
    token = CancelToken()
    calls: list[str] = []
    unsubscribe = token.on_cancel(lambda: calls.append("gone"))
    unsubscribe()
    token.on_cancel(lambda: calls.append("early"))
    assert token.wait(0.01) is False
    token.cancel()
    token.cancel()
    token.on_cancel(lambda: calls.append("late"))
    assert calls == ["early", "late"] and token.cancelled and token.wait(0)
