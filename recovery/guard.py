"""The guarded stream: the commit fence, the watchdog, and cancellation for one provider call.

Nothing leaves the guard until the attempt commits: message start, pings, block openings and
usage are held, and the first user-visible event (text, thinking, a complete tool call) releases
them. Before commit a failure is safe to retry or fail over; after it, the exposure stamped on the
failure tells the policy that replaying would show the viewer the same output twice.

Timeouts are enforced by a watchdog thread that shuts the attempt's socket down, because a
thread blocked in recv() cannot be woken any other way; the same path serves cancellation. One
watchdog thread serves every guarded stream of the process (a thread per stream, each waking
four times a second, made 200 more threads and 800 wake-ups a second at 200 streams). Three
timeouts, all configurable per target (``StreamTimeouts``):

- first chunk: from the request until the provider's first byte after the headers. Any byte
  counts (a ping, a keepalive, message_start): a provider that pings while it reasons is alive.
- idle: between any two reads, pings included.
- no progress: without a user-visible event (text, thinking, a whole tool call), before the
  first one and between later ones. A reasoning model that pings but shows nothing is cut only
  here, so a target serving one sets this high; thinking deltas are progress and keep it alive.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass

from recovery.cancel import CancelToken
from recovery.clock import Clock, SystemClock
from recovery.model_call import ModelCall
from recovery.providers import leased_adapter
from recovery.providers.abortable_http import AbortScope
from recovery.providers.base import ProviderAdapter, StreamTimeouts, TargetConfig
from recovery.providers.failures import stamped, wire_failure
from recovery.stream_events import StreamEvent, TextDelta, ThinkingDelta, ToolCall, TurnEnd, Usage
from recovery.taxonomy import Exposure, Kind, Phase, ProviderFailure, Source

logger = logging.getLogger(__name__)

_WATCH_SLICE_S = 0.25  # the watchdog re-reads the clock at least this often (FakeClock, jitter)


__all__ = ["CancelToken", "GuardedStream", "open_stream"]


def open_stream(
    target: TargetConfig,
    call: ModelCall,
    *,
    cancel: CancelToken,
    clock: Clock | None = None,
    timeouts: StreamTimeouts | None = None,
) -> GuardedStream:
    """A guarded stream for one model call; the request is sent when iteration starts.

        stream = open_stream(target, call, cancel=token)
        for event in stream:      # TextDelta | ThinkingDelta | ToolCall | Usage | TurnEnd
            ...
        # failures: ProviderFailure with Evidence, its exposure stamped here

    The target's adapter (and its SDK client's connection pool) is reused across calls; the
    stream holds it from the request until the stream ends.
    """
    clock = clock or SystemClock()
    timeouts = timeouts or StreamTimeouts()
    return GuardedStream(
        adapter=leased_adapter(target, timeouts=timeouts),
        call=call,
        target=target,
        cancel=cancel,
        clock=clock,
        timeouts=timeouts,
    )


@dataclass(frozen=True, slots=True)
class _Abort:
    kind: Kind
    detail: str


class GuardedStream:
    """Iterate once: ``for event in stream``. Failures are raised as ProviderFailure only."""

    def __init__(
        self,
        *,
        adapter: AbstractContextManager[ProviderAdapter],
        call: ModelCall,
        target: TargetConfig,
        cancel: CancelToken,
        clock: Clock | None = None,
        timeouts: StreamTimeouts | None = None,
    ) -> None:
        self._adapter = adapter
        self._call = call
        self._target = target
        self._cancel = cancel
        self._clock = clock or SystemClock()
        self._timeouts = timeouts or StreamTimeouts()
        self._scope = AbortScope()
        self._abort: _Abort | None = None
        self._exposure = Exposure.NONE
        self._committed = False
        self._started = False
        now = self._clock.monotonic()
        self._opened_at = now
        self._last_byte_at = now
        self._waiting_since: float | None = now
        self.bytes_received = 0
        self.ttft_ms: int | None = None
        self.usage: Usage | None = None
        self.terminal: TurnEnd | None = None

    @property
    def exposure(self) -> Exposure:
        return self._exposure

    @property
    def committed(self) -> bool:
        return self._committed

    def __iter__(self) -> Iterator[StreamEvent]:
        if self._started:
            raise RuntimeError("a guarded stream can be iterated only once")
        self._started = True
        return self._run()

    # ---- the fence ---------------------------------------------------------------------------

    def _run(self) -> Iterator[StreamEvent]:
        clock = self._clock
        monotonic = clock.monotonic  # bound once: this loop runs per event
        self._opened_at = self._last_byte_at = clock.monotonic()
        self._waiting_since = self._opened_at
        unsubscribe = self._cancel.on_cancel(self._on_cancel)
        _watchdog.watch(self)
        raw = None
        held: list[StreamEvent] = []
        lease = ExitStack()
        try:
            if self._abort is not None:
                raise self._abort_failure()
            adapter = lease.enter_context(self._adapter)
            with self._scope.bound():
                raw = adapter.open(self._call, on_bytes=self._saw_bytes, clock=clock)
            for item in raw.items():
                if isinstance(item, TextDelta | ThinkingDelta | ToolCall):
                    if not self._committed:
                        self._commit()
                    if isinstance(item, ToolCall):
                        self._exposure = Exposure.TOOL_CALL
                    if held:
                        yield from self._release(held)
                    self._waiting_since = None
                    yield item
                    # Resuming after visible output is progress: no-progress counts from here.
                    self._waiting_since = monotonic()
                elif isinstance(item, Usage):
                    self.usage = item
                    if self._committed:
                        self._waiting_since = None
                        yield item
                        self._waiting_since = monotonic()
                    else:
                        held.append(item)
                elif isinstance(item, TurnEnd):
                    # The provider's terminal event: the only way a stream counts as finished.
                    self.terminal = item
                    if self.usage is None and (item.usage.input_tokens or item.usage.output_tokens):
                        self.usage = item.usage
                    held.append(item)
                    yield from self._release(held)
                    return
                elif self._exposure is Exposure.NONE:
                    self._exposure = Exposure.METADATA
            raise wire_failure(
                provider_id=self._target.provider_id,
                model=self._target.model,
                kind=Kind.TRUNCATED,
                phase=Phase.STREAM,
                detail="stream ended without its terminal event",
            )
        except ProviderFailure as failure:
            raise self._stamp(failure) from None
        except Exception as error:
            raise self._stamp(self._unexpected(error)) from error
        finally:
            self._waiting_since = None
            _watchdog.forget(self)
            unsubscribe()
            with lease:
                if raw is not None:
                    raw.close()

    def _release(self, held: list[StreamEvent]) -> Iterator[StreamEvent]:
        self._waiting_since = None
        while held:
            yield held.pop(0)
        self._waiting_since = self._clock.monotonic()

    def _commit(self) -> None:
        self._committed = True
        self._exposure = Exposure.CONTENT
        self.ttft_ms = int((self._clock.monotonic() - self._opened_at) * 1000)

    def _saw_bytes(self, count: int) -> None:
        self.bytes_received += count
        self._last_byte_at = self._clock.monotonic()

    # ---- failures ----------------------------------------------------------------------------

    def _stamp(self, failure: ProviderFailure) -> ProviderFailure:
        if self._abort is not None:
            failure = self._abort_failure()
        return stamped(failure, exposure=self._exposure)

    def _abort_failure(self) -> ProviderFailure:
        abort = self._abort
        assert abort is not None
        phase = (
            Phase.CANCELLATION
            if abort.kind is Kind.CANCELLED
            else (Phase.STREAM if self.bytes_received else Phase.HEADERS)
        )
        return wire_failure(
            provider_id=self._target.provider_id,
            model=self._target.model,
            kind=abort.kind,
            phase=phase,
            detail=abort.detail,
            source=Source.HTTP,
        )

    def _unexpected(self, error: Exception) -> ProviderFailure:
        return wire_failure(
            provider_id=self._target.provider_id,
            model=self._target.model,
            kind=Kind.UNKNOWN,
            phase=Phase.PROTOCOL,
            source=Source.HTTP,
            detail=f"unexpected {type(error).__name__}: {error}",
        )

    # ---- watchdog and cancellation (called from other threads) -------------------------------

    def _on_cancel(self) -> None:
        self._trip(_Abort(Kind.CANCELLED, "cancelled by the user"))

    def _trip(self, abort: _Abort) -> None:
        if self._abort is None:
            self._abort = abort
        self._scope.abort()

    def _overdue(self) -> tuple[_Abort | None, float]:
        """The timeout that has fired, or None and the seconds until the next one could."""
        now = self._clock.monotonic()
        t = self._timeouts
        waits: list[float] = []
        if not self._committed:
            if not self.bytes_received:
                left = self._opened_at + t.first_chunk_s - now
                if left <= 0:
                    return _Abort(Kind.TIMEOUT, f"no response within {t.first_chunk_s:g} s"), 0.0
                waits.append(left)
            left = self._opened_at + t.no_progress_s - now
            if left <= 0:
                return _Abort(Kind.TIMEOUT, f"no output within {t.no_progress_s:g} s"), 0.0
            waits.append(left)
        waiting_since = self._waiting_since
        if waiting_since is not None:
            # Time the consumer spends handling an event is not the provider's idleness.
            left = max(self._last_byte_at, waiting_since) + t.idle_s - now
            if left <= 0:
                return _Abort(Kind.TIMEOUT, f"no bytes for {t.idle_s:g} s"), 0.0
            waits.append(left)
            if self._committed:
                left = waiting_since + t.no_progress_s - now
                if left <= 0:
                    return _Abort(Kind.TIMEOUT, f"no new output for {t.no_progress_s:g} s"), 0.0
                waits.append(left)
        return None, min(waits, default=_WATCH_SLICE_S)


class _Watchdog:
    """The process's one watchdog thread and the guarded streams it watches."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._guards: set[GuardedStream] = set()
        # Guards whose check raised: logged once each, not every slice until their stream ends.
        self._failing: weakref.WeakSet[GuardedStream] = weakref.WeakSet()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def watch(self, guard: GuardedStream) -> None:
        with self._lock:
            self._guards.add(guard)
            # A forked process inherits the object but not the thread.
            if self._thread is None or not self._thread.is_alive() or self._pid != os.getpid():
                self._pid = os.getpid()
                self._thread = threading.Thread(
                    target=self._run, name="guard-watchdog", daemon=True
                )
                self._thread.start()
            self._wake.notify()  # its deadline may be sooner than the current wait

    def forget(self, guard: GuardedStream) -> None:
        with self._lock:
            self._guards.discard(guard)

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._guards:
                    self._wake.wait()
                guards = list(self._guards)
            wait_s = _WATCH_SLICE_S
            for guard in guards:
                try:
                    abort, left_s = guard._overdue()
                    if abort is not None:
                        self.forget(guard)
                        guard._trip(abort)
                        continue
                except Exception:  # one broken guard must not unwatch the rest
                    if guard not in self._failing:
                        self._failing.add(guard)
                        logger.exception("guard watchdog failed for one stream")
                    continue
                self._failing.discard(guard)
                wait_s = min(wait_s, max(left_s, 0.005))
            with self._lock:
                self._wake.wait(wait_s)


_watchdog = _Watchdog()
