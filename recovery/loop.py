"""A small synchronous retry driver: one budget, one loop, no SDK retries, no nested loops.

Library users and the characterization tests call ``call_with_recovery``. The web app schedules
its waits as Celery tasks instead of sleeping, so the per-attempt step is public too:
``run_attempt`` opens one guarded stream, forwards its events, and on failure classifies and
asks the policy, returning everything the caller needs to persist and schedule the next step.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from recovery.budget import Budget, RetrySettings
from recovery.classify import classify
from recovery.clock import Clock
from recovery.events import ModelCall, StreamEvent, TextDelta, TurnEnd, Usage
from recovery.guard import CancelToken, open_stream
from recovery.policy import Action, Decision, decide
from recovery.providers.base import StreamTimeouts, TargetConfig
from recovery.taxonomy import Classification, Exposure, Kind, ProviderFailure
from recovery.telemetry import attempt_record_build, emit_attempt

EventSink = Callable[[StreamEvent], None]
DecisionSink = Callable[[Decision], None]
Sleep = Callable[[float, CancelToken], None]


def cancellable_sleep(seconds: float, cancel: CancelToken) -> None:
    """The default wait: returns early, within milliseconds, when the token is cancelled."""
    cancel.wait(seconds)


@dataclass(frozen=True, slots=True)
class AttemptResult:
    attempt: int  # 1-based, counted across every target of the turn
    target: str
    events: tuple[StreamEvent, ...]  # what escaped the guard, i.e. what a viewer saw
    exposure: Exposure
    failure: ProviderFailure | None = None
    classification: Classification | None = None
    decision: Decision | None = None
    ttft_ms: int | None = None
    bytes_received: int = 0
    usage: Usage | None = None

    @property
    def succeeded(self) -> bool:
        return self.failure is None


def run_attempt(
    *,
    call: ModelCall,
    target: TargetConfig,
    budget: Budget,
    fallbacks: Sequence[str],
    cancel: CancelToken,
    clock: Clock,
    rng: random.Random,
    timeouts: StreamTimeouts | None = None,
    on_event: EventSink | None = None,
) -> tuple[AttemptResult, Budget]:
    """One provider call through the guard. Returns the result and the budget with it spent."""
    budget = budget.record_attempt(target=target.label)
    stream = open_stream(target, call, cancel=cancel, clock=clock, timeouts=timeouts)
    events: list[StreamEvent] = []
    failure: ProviderFailure | None = None
    iterator = iter(stream)
    try:
        for event in iterator:
            events.append(event)
            if on_event is not None:
                on_event(event)
    except ProviderFailure as error:
        failure = error
    finally:
        iterator.close()  # a consumer that raises must not leave the response open
    usage = stream.usage
    classification = decision = None
    if failure is not None:
        classification = classify(failure.evidence)
        decision = decide(
            evidence=failure.evidence,
            classification=classification,
            budget=budget,
            current_target=target.label,
            fallbacks=fallbacks,
            clock=clock,
            rng=rng,
        )
    emit_attempt(
        attempt_record_build(
            attempt=budget.attempts,
            target=target.label,
            evidence=failure.evidence if failure else None,
            classification=classification,
            decision=decision,
            ttft_ms=stream.ttft_ms,
            bytes_received=stream.bytes_received,
            input_tokens=usage.input_tokens if usage else None,
            output_tokens=usage.output_tokens if usage else None,
        )
    )
    result = AttemptResult(
        attempt=budget.attempts,
        target=target.label,
        events=tuple(events),
        exposure=stream.exposure,
        failure=failure,
        classification=classification,
        decision=decision,
        ttft_ms=stream.ttft_ms,
        bytes_received=stream.bytes_received,
        usage=usage,
    )
    return result, budget


class OutcomeStatus(enum.StrEnum):
    SUCCEEDED = "succeeded"
    MANUAL = "manual"  # stopped: the person chooses what next (Resume / Start fresh)
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class Outcome:
    status: OutcomeStatus
    attempts: tuple[AttemptResult, ...]
    budget: Budget
    decision: Decision | None = None  # the decision that stopped the loop, if one did

    @property
    def events(self) -> tuple[StreamEvent, ...]:
        return tuple(event for attempt in self.attempts for event in attempt.events)

    @property
    def text(self) -> str:
        return "".join(event.text for event in self.events if isinstance(event, TextDelta))

    @property
    def turn_end(self) -> TurnEnd | None:
        last = self.attempts[-1].events[-1] if self.attempts and self.attempts[-1].events else None
        return last if isinstance(last, TurnEnd) else None

    @property
    def incomplete(self) -> bool:
        """Output reached the viewer but the turn did not finish: keep it, marked incomplete."""
        return self.status is not OutcomeStatus.SUCCEEDED and any(
            attempt.exposure.is_user_visible for attempt in self.attempts
        )


def call_with_recovery(
    *,
    call: ModelCall,
    targets: Sequence[TargetConfig],
    settings: RetrySettings,
    clock: Clock,
    rng: random.Random,
    cancel: CancelToken,
    sleep: Sleep = cancellable_sleep,
    on_event: EventSink | None = None,
    on_decision: DecisionSink | None = None,
    timeouts: StreamTimeouts | None = None,
) -> Outcome:
    if not targets:
        raise ValueError("call_with_recovery needs at least one target")
    by_label = {target.label: target for target in targets}
    fallbacks = [target.label for target in targets[1:]]
    current = targets[0]
    budget = Budget.start(settings=settings, clock=clock, target=current.label)
    attempts: list[AttemptResult] = []
    while True:
        if cancel.cancelled:
            return Outcome(OutcomeStatus.CANCELLED, tuple(attempts), budget)
        result, budget = run_attempt(
            call=call,
            target=current,
            budget=budget,
            fallbacks=fallbacks,
            cancel=cancel,
            clock=clock,
            rng=rng,
            timeouts=timeouts,
            on_event=on_event,
        )
        attempts.append(result)
        if result.succeeded:
            return Outcome(OutcomeStatus.SUCCEEDED, tuple(attempts), budget)
        decision = result.decision
        assert decision is not None
        if on_decision is not None:
            on_decision(decision)
        if result.failure.evidence.kind is Kind.CANCELLED or cancel.cancelled:
            return Outcome(OutcomeStatus.CANCELLED, tuple(attempts), budget, decision)
        if decision.action is Action.MANUAL:
            return Outcome(OutcomeStatus.MANUAL, tuple(attempts), budget, decision)
        if decision.wait_s > 0:
            sleep(decision.wait_s, cancel)
            if cancel.cancelled:
                return Outcome(OutcomeStatus.CANCELLED, tuple(attempts), budget, decision)
            budget = budget.record_wait(decision.wait_s)
        if decision.action is Action.FAILOVER and decision.target in by_label:
            current = by_label[decision.target]
