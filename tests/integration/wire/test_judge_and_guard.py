"""Characterization: the guard and the one failure judge over both SDKs and real HTTP, counting
what the server saw.

``take_turn`` does what the app's ladder does with the library, minus persistence: open a guarded
stream, hand a failure to ``judge`` once, wait as decided, go again (or fail over). Backoff waits go
through an injected wait on a fake wall clock, so no test sleeps through them; guard timeouts are
real but set to fractions of a second."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pytest

from recovery.budget import Budget, RetrySettings
from recovery.guard import CancelToken, open_stream
from recovery.judge import CallStats, Judgement, judge
from recovery.mock.scenario_request import answer_text
from recovery.policy import Action, Decision
from recovery.providers import StreamTimeouts, TargetConfig
from recovery.stream_events import StreamEvent, TextDelta, ToolCall, TurnEnd
from recovery.taxonomy import Code, Exposure, Kind, ProviderFailure

from .conftest import MockProvider, RecordingSleep, SplitClock, user_call

WIRES = ["anthropic", "openai"]
SETTINGS = RetrySettings(delays_s=(5, 10, 20, 40, 60), max_attempts=5, jitter=0.2, deadline_s=150)
FAST = StreamTimeouts(first_chunk_s=0.4, idle_s=2.0, no_progress_s=2.0)
Wait = Callable[[float, CancelToken], None]


@dataclass(frozen=True, slots=True)
class Attempt:
    target: str
    events: tuple[StreamEvent, ...]  # what escaped the guard, i.e. what a viewer saw
    exposure: Exposure
    failure: ProviderFailure | None
    judgement: Judgement | None


@dataclass
class Turn:
    attempts: list[Attempt] = field(default_factory=list)
    cancelled: bool = False

    @property
    def succeeded(self) -> bool:
        return not self.cancelled and self.attempts[-1].failure is None

    @property
    def decision(self) -> Decision | None:
        judgement = self.attempts[-1].judgement
        return judgement.decision if judgement else None

    @property
    def manual(self) -> bool:
        return self.decision is not None and self.decision.action is Action.MANUAL

    @property
    def events(self) -> list[StreamEvent]:
        return [event for attempt in self.attempts for event in attempt.events]

    @property
    def turn_end(self) -> TurnEnd | None:
        last = self.attempts[-1].events[-1] if self.attempts[-1].events else None
        return last if isinstance(last, TurnEnd) else None


def take_turn(
    mock: MockProvider,
    wire: str,
    prompt: str,
    *,
    settings: RetrySettings = SETTINGS,
    targets: Sequence[TargetConfig] | None = None,
    cancel: CancelToken | None = None,
    wait: Wait | None = None,
    timeouts: StreamTimeouts = FAST,
) -> tuple[Turn, list[StreamEvent], RecordingSleep]:
    clock, rng, cancel = SplitClock(), random.Random(7), cancel or CancelToken()
    recorder = RecordingSleep(clock)
    wait = wait or recorder
    targets = list(targets or [mock.target(wire)])
    by_label = {target.label: target for target in targets}
    target = targets[0]
    budget = Budget.start(settings=settings, clock=clock, target=target.label)
    turn, seen = Turn(), []
    while True:
        budget = budget.record_attempt(target=target.label)
        call = user_call(prompt)
        stream = open_stream(target, call, cancel=cancel, clock=clock, timeouts=timeouts)
        shown: list[StreamEvent] = []
        failure = judgement = None
        try:
            for event in stream:
                shown.append(event)
                seen.append(event)
        except ProviderFailure as error:
            failure = error
            judgement = judge(
                evidence=error.evidence,
                budget=budget,
                attempt=budget.attempts,
                current_target=target.label,
                fallbacks=[t.label for t in targets[1:]],
                clock=clock,
                rng=rng,
                stats=CallStats.of(stream),
            )
        attempt = Attempt(target.label, tuple(shown), stream.exposure, failure, judgement)
        turn.attempts.append(attempt)
        if failure is not None and (failure.evidence.kind is Kind.CANCELLED or cancel.cancelled):
            turn.cancelled = True
            return turn, seen, recorder
        if judgement is None or judgement.decision.action is Action.MANUAL:
            return turn, seen, recorder
        decision = judgement.decision
        if decision.wait_s > 0:
            wait(decision.wait_s, cancel)
            if cancel.cancelled:
                turn.cancelled = True
                return turn, seen, recorder
            budget = budget.record_wait(decision.wait_s)
        target = by_label.get(decision.target or "", target)


def text_of(events: list[StreamEvent]) -> str:
    return "".join(event.text for event in events if isinstance(event, TextDelta))


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize(
    "scenario",
    [
        "overloaded:2",
        "overloaded-sse:2",
        "server-error:1:502",
        "drop-before-output:1",
        "cut-before-output:1",
        "rate-limited:1",
    ],
)
def test_it_recovers_from_a_transient_failure_before_any_output(
    mock_provider: MockProvider, wire: str, scenario: str
) -> None:
    turn, seen, sleep = take_turn(mock_provider, wire, f"/{scenario} tell me a joke")
    failures = int(scenario.split(":")[1])
    assert turn.succeeded
    assert mock_provider.count() == failures + 1 == len(turn.attempts)
    assert text_of(seen) == answer_text("tell me a joke")
    assert len(sleep.waits) == failures and 4.0 <= sleep.waits[0] <= 6.0  # 5 s +-20 %
    first = turn.attempts[0].judgement
    assert first.decision.action is Action.RETRY and first.record.decision == "retry"
    assert (first.decision.attempt, first.decision.max_attempts) == (1, 5)


@pytest.mark.parametrize("wire", WIRES)
def test_it_recovers_when_the_overload_came_after_message_start_only(
    mock_provider: MockProvider, wire: str
) -> None:
    turn, seen, _ = take_turn(mock_provider, wire, "/overloaded-after-start:1 tell me a joke")
    assert turn.succeeded
    assert mock_provider.count() == 2
    assert turn.attempts[0].exposure in (Exposure.METADATA, Exposure.NONE)
    assert turn.attempts[0].events == ()  # the held metadata never reached the consumer
    assert sum(isinstance(e, TurnEnd) for e in seen) == 1
    assert text_of(seen) == answer_text("tell me a joke")


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize(
    "scenario",
    ["overloaded-after-text", "drop", "rate-limited-after-text", "server-error-after-text", "cut"],
)
def test_partial_text_then_a_failure_is_never_replayed(
    mock_provider: MockProvider, wire: str, scenario: str
) -> None:
    if wire == "openai" and scenario in ("rate-limited-after-text", "server-error-after-text"):
        scenario = "overloaded-after-text"  # OpenAI sends every in-stream failure the same way
    turn, seen, sleep = take_turn(mock_provider, wire, f"/{scenario}:1 tell me a joke")
    assert turn.manual
    assert mock_provider.count() == 1 and sleep.waits == []
    partial = text_of(seen)
    whole = answer_text("tell me a joke")
    assert partial and whole.startswith(partial) and partial != whole
    assert turn.attempts[0].exposure.is_user_visible and turn.turn_end is None
    assert "after part of the answer was shown" in turn.decision.message


def test_a_partial_tool_call_then_a_failure_retries_and_the_tool_call_escapes_once(
    mock_provider: MockProvider,
) -> None:
    turn, seen, _ = take_turn(mock_provider, "anthropic", "/tool-partial-fail:1 note this")
    assert turn.succeeded and mock_provider.count() == 2
    assert [e.name for e in seen if isinstance(e, ToolCall)] == ["append_note"]


def test_a_complete_tool_call_then_a_failure_is_not_retried(mock_provider: MockProvider) -> None:
    turn, seen, _ = take_turn(mock_provider, "anthropic", "/tool-complete-fail:1 note this")
    assert turn.manual and mock_provider.count() == 1
    assert turn.attempts[0].exposure is Exposure.TOOL_CALL
    assert turn.attempts[0].judgement.record.exposure == "tool_call"
    assert [type(e) for e in seen] == [ToolCall]


def test_openai_tool_arguments_without_finish_reason_never_escape_so_a_retry_is_safe(
    mock_provider: MockProvider,
) -> None:
    turn, seen, _ = take_turn(mock_provider, "openai", "/tool-complete-fail:1 note this")
    assert turn.succeeded and mock_provider.count() == 2
    assert turn.attempts[0].events == ()
    assert len([e for e in seen if isinstance(e, ToolCall)]) == 1


@pytest.mark.parametrize("wire", WIRES)
def test_a_malformed_event_stops_for_a_person_without_retrying(
    mock_provider: MockProvider, wire: str
) -> None:
    turn, seen, _ = take_turn(mock_provider, wire, "/malformed:1 hi")
    assert turn.manual and mock_provider.count() == 1
    assert turn.decision.classification.code is Code.MALFORMED_STREAM and seen == []


@pytest.mark.parametrize("wire", WIRES)
def test_eof_without_a_terminal_event_is_never_a_successful_turn(
    mock_provider: MockProvider, wire: str
) -> None:
    turn, _, _ = take_turn(mock_provider, wire, "/cut-before-output:99 hi")
    assert turn.manual
    assert all(a.failure.evidence.kind is Kind.TRUNCATED for a in turn.attempts)
    assert turn.turn_end is None


@pytest.mark.parametrize("wire", WIRES)
def test_attempts_are_bounded_across_all_layers(mock_provider: MockProvider, wire: str) -> None:
    turn, _, sleep = take_turn(mock_provider, wire, "/overloaded:99 hi")
    # The first call plus five retries; no SDK retries underneath, no nested loop.
    assert mock_provider.count() == 6 == len(turn.attempts)
    assert turn.manual and len(sleep.waits) == 5
    assert "5 attempts" in turn.decision.message
    assert [a.judgement.record.attempt for a in turn.attempts] == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("wire", WIRES)
def test_retry_after_is_a_floor_for_the_next_wait(mock_provider: MockProvider, wire: str) -> None:
    turn, _, sleep = take_turn(mock_provider, wire, "/rate-limited:1:30 hi")
    assert turn.succeeded
    assert sleep.waits[0] >= 30


@pytest.mark.parametrize(
    ("wire", "scenario"), [("anthropic", "quota"), ("openai", "quota"), ("anthropic", "auth")]
)
def test_hard_failures_go_straight_to_a_person(
    mock_provider: MockProvider, wire: str, scenario: str
) -> None:
    turn, _, sleep = take_turn(mock_provider, wire, f"/{scenario}")
    assert turn.manual and mock_provider.count() == 1 and sleep.waits == []


def test_it_fails_over_to_the_next_target_when_the_wait_would_outlast_the_budget(
    mock_provider: MockProvider,
) -> None:
    mock_provider.script("/overloaded:99", model="primary")
    targets = [
        mock_provider.target("anthropic", model="primary"),
        mock_provider.target("openai", model="backup"),
    ]
    short = RetrySettings(delays_s=(5,), max_attempts=5, jitter=0.0, deadline_s=3)

    turn, _, sleep = take_turn(mock_provider, "anthropic", "hello", settings=short, targets=targets)

    assert turn.succeeded and sleep.waits == []
    assert [a.judgement.decision.action for a in turn.attempts[:-1]] == [Action.FAILOVER]
    assert [a.target for a in turn.attempts] == [t.label for t in targets]
    assert [r["model"] for r in mock_provider.requests()] == ["primary", "backup"]


@pytest.mark.parametrize("wire", WIRES)
def test_a_first_chunk_timeout_retries_and_the_losing_response_is_closed(
    mock_provider: MockProvider, wire: str
) -> None:
    turn, _, _ = take_turn(mock_provider, wire, "/slow-first-byte:3000:1 hi")
    assert turn.succeeded
    assert turn.attempts[0].failure.evidence.kind is Kind.TIMEOUT
    seen = mock_provider.wait_for(lambda rs: rs and rs[0]["disconnected"], timeout_s=1.0)
    assert seen[0]["disconnected"] and not seen[0]["completed"]  # the server saw us hang up
    assert len(seen) == 2 and seen[1]["completed"]


@pytest.mark.parametrize("wire", WIRES)
def test_cancel_during_a_first_chunk_wait_returns_within_100_ms(
    mock_provider: MockProvider, wire: str
) -> None:
    cancel = CancelToken()
    pressed: list[float] = []

    def press() -> None:
        # Press Cancel once the request has reached the server and is waiting for a first byte.
        mock_provider.wait_for(lambda requests: bool(requests), timeout_s=5.0)
        pressed.append(time.monotonic())
        cancel.cancel()

    threading.Thread(target=press).start()
    turn, _, sleep = take_turn(
        mock_provider,
        wire,
        "/slow-first-byte:5000 hi",
        cancel=cancel,
        timeouts=StreamTimeouts(first_chunk_s=10),
    )
    returned = time.monotonic()
    assert turn.cancelled and sleep.waits == []
    assert turn.attempts[0].judgement.classification.code is Code.CANCELLED
    assert returned - pressed[0] < 0.1
    assert mock_provider.wait_for(lambda rs: rs and rs[0]["disconnected"])[0]["disconnected"]


@pytest.mark.parametrize("wire", WIRES)
def test_cancel_during_a_backoff_wait_returns_within_100_ms(
    mock_provider: MockProvider, wire: str
) -> None:
    cancel = CancelToken()
    pressed: list[float] = []

    def blocking_wait(seconds: float, token: CancelToken) -> None:
        threading.Timer(0.05, lambda: (pressed.append(time.monotonic()), cancel.cancel())).start()
        token.wait(seconds)  # a real wait of 5 s that only the cancel cuts short

    turn, _, _ = take_turn(
        mock_provider, wire, "/overloaded:3 hi", cancel=cancel, wait=blocking_wait
    )
    returned = time.monotonic()
    assert turn.cancelled
    assert returned - pressed[0] < 0.1
    assert mock_provider.count() == 1
