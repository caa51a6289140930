"""Characterization: the driver over both SDKs and real HTTP, counting what the server saw.

Backoff waits go through an injected sleep on a fake wall clock, so no test sleeps through
them; guard timeouts are real but set to fractions of a second."""

from __future__ import annotations

import random
import threading
import time

import pytest

from recovery.budget import RetrySettings
from recovery.events import TextDelta, ToolCall, TurnEnd
from recovery.guard import CancelToken
from recovery.loop import Outcome, OutcomeStatus, call_with_recovery
from recovery.mock.scenarios import answer_text
from recovery.policy import Action
from recovery.providers import StreamTimeouts
from recovery.taxonomy import Code, Exposure

from .conftest import MockProvider, RecordingSleep, SplitClock, user_call

WIRES = ["anthropic", "openai"]
SETTINGS = RetrySettings(delays_s=(5, 10, 20, 40, 60), max_attempts=5, jitter=0.2, deadline_s=150)
FAST = StreamTimeouts(first_chunk_s=0.4, idle_s=2.0, no_progress_s=2.0)


def recover(
    mock: MockProvider,
    wire: str,
    prompt: str,
    *,
    settings: RetrySettings = SETTINGS,
    targets=None,
    cancel: CancelToken | None = None,
    sleep=None,
    timeouts: StreamTimeouts = FAST,
) -> tuple[Outcome, list, RecordingSleep]:
    clock = SplitClock()
    recorder = RecordingSleep(clock)
    seen: list = []
    outcome = call_with_recovery(
        call=user_call(prompt),
        targets=targets or [mock.target(wire)],
        settings=settings,
        clock=clock,
        rng=random.Random(7),
        cancel=cancel or CancelToken(),
        sleep=sleep or recorder,
        on_event=seen.append,
        timeouts=timeouts,
    )
    return outcome, seen, recorder


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
    outcome, seen, sleep = recover(mock_provider, wire, f"/{scenario} tell me a joke")
    failures = int(scenario.split(":")[1])
    assert outcome.status is OutcomeStatus.SUCCEEDED
    assert mock_provider.count() == failures + 1
    assert "".join(e.text for e in seen if isinstance(e, TextDelta)) == answer_text(
        "tell me a joke"
    )
    assert len(sleep.waits) == failures and 4.0 <= sleep.waits[0] <= 6.0  # 5 s +-20 %
    assert outcome.budget.attempts == failures + 1


@pytest.mark.parametrize("wire", WIRES)
def test_it_recovers_when_the_overload_came_after_message_start_only(
    mock_provider: MockProvider, wire: str
) -> None:
    outcome, seen, _ = recover(mock_provider, wire, "/overloaded-after-start:1 tell me a joke")
    assert outcome.status is OutcomeStatus.SUCCEEDED
    assert mock_provider.count() == 2
    assert outcome.attempts[0].exposure in (Exposure.METADATA, Exposure.NONE)
    assert outcome.attempts[0].events == ()  # the held metadata never reached the consumer
    assert sum(isinstance(e, TurnEnd) for e in seen) == 1
    assert "".join(e.text for e in seen if isinstance(e, TextDelta)) == answer_text(
        "tell me a joke"
    )


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
    outcome, seen, sleep = recover(mock_provider, wire, f"/{scenario}:1 tell me a joke")
    assert outcome.status is OutcomeStatus.MANUAL
    assert outcome.decision.action is Action.MANUAL
    assert mock_provider.count() == 1 and sleep.waits == []
    partial = "".join(e.text for e in seen if isinstance(e, TextDelta))
    assert (
        partial
        and answer_text("tell me a joke").startswith(partial)
        and partial != answer_text("tell me a joke")
    )
    assert outcome.incomplete and outcome.turn_end is None


def test_a_partial_tool_call_then_a_failure_retries_and_the_tool_call_escapes_once(
    mock_provider: MockProvider,
) -> None:
    outcome, seen, _ = recover(mock_provider, "anthropic", "/tool-partial-fail:1 note this")
    assert outcome.status is OutcomeStatus.SUCCEEDED and mock_provider.count() == 2
    assert [e.name for e in seen if isinstance(e, ToolCall)] == ["append_note"]


def test_a_complete_tool_call_then_a_failure_is_not_retried(mock_provider: MockProvider) -> None:
    outcome, seen, _ = recover(mock_provider, "anthropic", "/tool-complete-fail:1 note this")
    assert outcome.status is OutcomeStatus.MANUAL and mock_provider.count() == 1
    assert outcome.attempts[0].exposure is Exposure.TOOL_CALL
    assert [type(e) for e in seen] == [ToolCall]


def test_openai_tool_arguments_without_finish_reason_never_escape_so_a_retry_is_safe(
    mock_provider: MockProvider,
) -> None:
    outcome, seen, _ = recover(mock_provider, "openai", "/tool-complete-fail:1 note this")
    assert outcome.status is OutcomeStatus.SUCCEEDED and mock_provider.count() == 2
    assert outcome.attempts[0].events == ()
    assert len([e for e in seen if isinstance(e, ToolCall)]) == 1


@pytest.mark.parametrize("wire", WIRES)
def test_a_malformed_event_stops_for_a_person_without_retrying(
    mock_provider: MockProvider, wire: str
) -> None:
    outcome, seen, _ = recover(mock_provider, wire, "/malformed:1 hi")
    assert outcome.status is OutcomeStatus.MANUAL and mock_provider.count() == 1
    assert outcome.decision.classification.code is Code.MALFORMED_STREAM and seen == []


@pytest.mark.parametrize("wire", WIRES)
def test_eof_without_a_terminal_event_is_never_a_successful_turn(
    mock_provider: MockProvider, wire: str
) -> None:
    outcome, _, _ = recover(mock_provider, wire, "/cut-before-output:99 hi")
    assert outcome.status is OutcomeStatus.MANUAL
    assert all(a.failure.evidence.kind == "truncated" for a in outcome.attempts)
    assert outcome.turn_end is None


@pytest.mark.parametrize("wire", WIRES)
def test_attempts_are_bounded_across_all_layers(mock_provider: MockProvider, wire: str) -> None:
    outcome, _, sleep = recover(mock_provider, wire, "/overloaded:99 hi")
    # The first call plus five retries; no SDK retries underneath, no nested loop.
    assert mock_provider.count() == 6
    assert outcome.status is OutcomeStatus.MANUAL and len(sleep.waits) == 5
    assert "5 attempts" in outcome.decision.message


@pytest.mark.parametrize("wire", WIRES)
def test_retry_after_is_a_floor_for_the_next_wait(mock_provider: MockProvider, wire: str) -> None:
    outcome, _, sleep = recover(mock_provider, wire, "/rate-limited:1:30 hi")
    assert outcome.status is OutcomeStatus.SUCCEEDED
    assert sleep.waits[0] >= 30


@pytest.mark.parametrize(
    ("wire", "scenario"), [("anthropic", "quota"), ("openai", "quota"), ("anthropic", "auth")]
)
def test_hard_failures_go_straight_to_a_person(
    mock_provider: MockProvider, wire: str, scenario: str
) -> None:
    outcome, _, sleep = recover(mock_provider, wire, f"/{scenario}")
    assert (
        outcome.status is OutcomeStatus.MANUAL and mock_provider.count() == 1 and sleep.waits == []
    )


def test_it_fails_over_to_the_next_target_when_the_wait_would_outlast_the_budget(
    mock_provider: MockProvider,
) -> None:
    mock_provider.script("/overloaded:99", model="primary")
    targets = [
        mock_provider.target("anthropic", model="primary"),
        mock_provider.target("openai", model="backup"),
    ]
    short = RetrySettings(delays_s=(5,), max_attempts=5, jitter=0.0, deadline_s=3)
    decisions: list = []
    clock = SplitClock()
    outcome = call_with_recovery(
        call=user_call("hello"),
        targets=targets,
        settings=short,
        clock=clock,
        rng=random.Random(1),
        cancel=CancelToken(),
        sleep=RecordingSleep(clock),
        on_decision=decisions.append,
        timeouts=FAST,
    )
    assert outcome.status is OutcomeStatus.SUCCEEDED
    assert [d.action for d in decisions] == [Action.FAILOVER]
    assert [r["model"] for r in mock_provider.requests()] == ["primary", "backup"]


@pytest.mark.parametrize("wire", WIRES)
def test_a_first_chunk_timeout_retries_and_the_losing_response_is_closed(
    mock_provider: MockProvider, wire: str
) -> None:
    outcome, _, _ = recover(mock_provider, wire, "/slow-first-byte:3000:1 hi")
    assert outcome.status is OutcomeStatus.SUCCEEDED
    assert outcome.attempts[0].failure.evidence.kind == "timeout"
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
    outcome, _, sleep = recover(
        mock_provider,
        wire,
        "/slow-first-byte:5000 hi",
        cancel=cancel,
        timeouts=StreamTimeouts(first_chunk_s=10),
    )
    returned = time.monotonic()
    assert outcome.status is OutcomeStatus.CANCELLED and sleep.waits == []
    assert returned - pressed[0] < 0.1
    assert mock_provider.wait_for(lambda rs: rs and rs[0]["disconnected"])[0]["disconnected"]


@pytest.mark.parametrize("wire", WIRES)
def test_cancel_during_a_backoff_wait_returns_within_100_ms(
    mock_provider: MockProvider, wire: str
) -> None:
    cancel = CancelToken()
    pressed: list[float] = []

    def blocking_sleep(seconds: float, token: CancelToken) -> None:
        threading.Timer(0.05, lambda: (pressed.append(time.monotonic()), cancel.cancel())).start()
        token.wait(seconds)  # a real wait of 5 s that only the cancel cuts short

    outcome, _, _ = recover(
        mock_provider, wire, "/overloaded:3 hi", cancel=cancel, sleep=blocking_sleep
    )
    returned = time.monotonic()
    assert outcome.status is OutcomeStatus.CANCELLED
    assert returned - pressed[0] < 0.1
    assert mock_provider.count() == 1
