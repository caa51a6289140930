"""Decisions with an injected clock and a seeded random source: exact waits, never sleeping."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest

from recovery.budget import Budget, RetrySettings
from recovery.classify import classify
from recovery.clock import FakeClock
from recovery.policy import Action, decide
from recovery.taxonomy import Code, Evidence, Exposure, Kind, Source
from recovery.wording import duration_phrase

OVERLOADED = json.dumps(
    {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
)
NO_JITTER = RetrySettings(jitter=0)


def overload(**fields) -> Evidence:
    return Evidence(source=Source.HTTP, status=529, excerpt=OVERLOADED, **fields)


def budget_after(attempts: int, *, clock: FakeClock, settings=NO_JITTER, targets=("primary",)):
    # The call first failed when the budget opened: its deadline runs from there.
    budget = Budget.start(settings=settings, clock=clock, target=targets[0])
    budget = budget.record_failure(clock=clock)
    for number in range(attempts):
        budget = budget.record_attempt(target=targets[min(number, len(targets) - 1)])
    return budget


def decide_for(evidence, *, clock, budget, fallbacks=(), seed=7):
    return decide(
        evidence=evidence,
        classification=classify(evidence),
        budget=budget,
        current_target="primary",
        fallbacks=fallbacks,
        clock=clock,
        rng=random.Random(seed),
    )


def test_it_retries_an_overload_before_any_output_after_the_first_ladder_delay():
    clock = FakeClock()
    decision = decide_for(overload(), clock=clock, budget=budget_after(1, clock=clock))

    assert decision.action is Action.RETRY
    assert (decision.wait_s, decision.retry_at) == (5.0, clock.now() + 5.0)
    assert (decision.target, decision.attempt, decision.max_attempts) == ("primary", 1, 5)
    assert decision.message == "Provider overloaded. Retrying in 5 s (attempt 1 of 5)."


def test_it_walks_the_ladder_one_delay_per_failed_attempt():
    clock = FakeClock()
    settings = RetrySettings(jitter=0, deadline_s=10_000)
    waits = [
        decide_for(
            overload(), clock=clock, budget=budget_after(k, clock=clock, settings=settings)
        ).wait_s
        for k in range(1, 5)
    ]
    assert waits == [5, 10, 20, 40]


def test_jitter_stays_within_twenty_percent_and_is_reproducible_from_the_seed():
    clock = FakeClock()
    budget = budget_after(1, clock=clock, settings=RetrySettings())
    waits = [
        decide_for(overload(), clock=clock, budget=budget, seed=seed).wait_s for seed in range(50)
    ]

    assert all(4.0 <= wait <= 6.0 for wait in waits)
    assert len(set(waits)) > 40  # clients spread out instead of retrying in lockstep
    assert decide_for(overload(), clock=clock, budget=budget, seed=3) == decide_for(
        overload(), clock=clock, budget=budget, seed=3
    )


@pytest.mark.parametrize(
    ("retry_after_ms", "expected_wait"),
    [
        (12_000, 12.0),  # a floor above the ladder raises the wait
        (2_000, 5.0),  # a floor below the ladder never shortens it
        (0, 5.0),  # 0 means "no floor", not "retry at once"
        (60_000, 60.0),  # up to retry_after_cap_s it is honoured as sent
    ],
)
def test_retry_after_is_a_capped_floor(retry_after_ms, expected_wait):
    clock = FakeClock()
    decision = decide_for(
        overload(retry_after_ms=retry_after_ms), clock=clock, budget=budget_after(1, clock=clock)
    )
    assert (decision.action, decision.wait_s) == (Action.RETRY, expected_wait)


def test_a_retry_after_beyond_the_cap_is_not_retried_at_the_cap_and_names_the_wait():
    clock = FakeClock()
    decision = decide_for(
        overload(retry_after_ms=90_000), clock=clock, budget=budget_after(1, clock=clock)
    )

    assert decision.action is Action.MANUAL  # never a retry at 60 s the provider would refuse
    assert decision.message == (
        "Provider overloaded. The provider asked to wait 1 min 30 s before trying again, longer "
        "than the longest wait automatic retry takes (1 min), so it was not retried "
        "automatically. Resume after that."
    )


def test_a_retry_after_beyond_the_cap_fails_over_when_a_fallback_is_free():
    clock = FakeClock()
    decision = decide_for(
        overload(retry_after_ms=90_000),
        clock=clock,
        budget=budget_after(1, clock=clock),
        fallbacks=["backup"],
    )
    assert (decision.action, decision.target) == (Action.FAILOVER, "backup")


def test_a_retry_after_beyond_the_deadline_names_the_wait_not_a_hard_failure():
    clock = FakeClock()
    settings = RetrySettings(jitter=0, retry_after_cap_s=300)
    budget = budget_after(1, clock=clock, settings=settings)
    clock.advance(100)  # 50 s left

    decision = decide_for(overload(retry_after_ms=120_000), clock=clock, budget=budget)

    assert decision.action is Action.MANUAL
    assert "Retrying would not fix this" not in decision.message
    assert decision.message == (
        "Provider overloaded. The provider asked to wait 2 min before trying again, longer than "
        "the time automatic retry has left (50 s), so it was not retried automatically. Resume "
        "after that."
    )


def test_a_rate_limit_retry_after_of_90_s_is_waited_for_not_retried_at_60():
    clock = FakeClock()
    evidence = Evidence(source=Source.HTTP, status=429, excerpt="", retry_after_ms=90_000)

    decision = decide_for(evidence, clock=clock, budget=budget_after(1, clock=clock))

    assert (decision.action, decision.wait_s) == (Action.WAIT_FOR_RESET, 90.0)


@pytest.mark.parametrize("retry_after_ms", [10**15, 10**12 * 1000])
def test_an_absurd_provider_wait_is_bounded_in_what_the_card_says(retry_after_ms):
    clock = FakeClock()
    evidence = Evidence(source=Source.HTTP, status=429, excerpt="", retry_after_ms=retry_after_ms)

    decision = decide_for(evidence, clock=clock, budget=budget_after(1, clock=clock))

    assert decision.action is Action.MANUAL
    assert decision.message == "Rate limited. The limit resets in about 30 days."


def test_x_should_retry_false_stops_a_transient_failure():
    clock = FakeClock()
    decision = decide_for(
        overload(should_retry=False),
        clock=clock,
        budget=budget_after(1, clock=clock),
        fallbacks=["b"],
    )

    assert decision.action is Action.MANUAL
    assert decision.message == (
        "Provider overloaded. The provider said this request should not be retried, so it was "
        "not retried automatically."
    )


def test_x_should_retry_true_lets_an_unknown_failure_be_retried_on_the_ladder():
    clock = FakeClock()
    unknown = Evidence(source=Source.HTTP, status=409, excerpt='{"error": "conflict"}')
    assert decide_for(unknown, clock=clock, budget=budget_after(1, clock=clock)).action is (
        Action.MANUAL
    )

    decision = decide_for(
        replace(unknown, should_retry=True), clock=clock, budget=budget_after(1, clock=clock)
    )

    assert (decision.action, decision.wait_s) == (Action.RETRY, 5.0)


def test_x_should_retry_true_does_not_make_a_hard_failure_retryable():
    clock = FakeClock()
    auth = Evidence(
        source=Source.HTTP,
        status=401,
        excerpt=(
            '{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}'
        ),
        provider_code="authentication_error",
        should_retry=True,
    )
    assert decide_for(auth, clock=clock, budget=budget_after(1, clock=clock)).action is (
        Action.MANUAL
    )


def test_a_retry_after_beyond_the_remaining_budget_fails_over_at_once():
    clock = FakeClock()
    decision = decide_for(
        overload(retry_after_ms=200_000),
        clock=clock,
        budget=budget_after(1, clock=clock),
        fallbacks=["backup"],
    )
    assert (decision.action, decision.target, decision.wait_s, decision.retry_at) == (
        Action.FAILOVER,
        "backup",
        0.0,
        clock.now(),
    )
    assert decision.message == "Provider overloaded. Switching to backup."


def test_a_wait_past_the_deadline_without_fallbacks_hands_back_honestly():
    clock = FakeClock()
    budget = budget_after(3, clock=clock)
    clock.advance(140)  # 10 s left; the ladder asks for 20

    decision = decide_for(overload(), clock=clock, budget=budget)

    assert decision.action is Action.MANUAL
    assert (decision.wait_s, decision.retry_at, decision.target, decision.attempt) == (
        0.0,
        None,
        None,
        2,
    )
    assert (
        decision.message
        == "The provider remained overloaded for 2 min 20 s; automatic retries have stopped."
    )


def test_exhausted_attempts_end_in_manual_recovery():
    clock = FakeClock()
    decision = decide_for(
        overload(), clock=clock, budget=budget_after(6, clock=clock), fallbacks=["backup"]
    )

    assert (decision.action, decision.attempt, decision.max_attempts) == (Action.MANUAL, 5, 5)
    assert decision.message == "The provider remained overloaded after 5 attempts."


def test_failover_goes_to_the_first_unvisited_fallback_in_order():
    clock = FakeClock()
    budget = budget_after(2, clock=clock, targets=("primary", "b"))
    clock.advance(145)  # 5 s left; the ladder asks for 10

    decision = decide_for(overload(), clock=clock, budget=budget, fallbacks=["b", "c", "d"])

    assert (decision.action, decision.target, decision.attempt) == (Action.FAILOVER, "c", 2)


def test_no_failover_once_every_fallback_was_visited():
    clock = FakeClock()
    budget = budget_after(2, clock=clock, targets=("primary", "b"))
    clock.advance(145)  # 5 s left; the ladder asks for 10

    assert (
        decide_for(overload(), clock=clock, budget=budget, fallbacks=["b"]).action is Action.MANUAL
    )


@pytest.mark.parametrize("exposure", [Exposure.CONTENT, Exposure.TOOL_CALL])
def test_a_failure_after_output_reached_a_viewer_is_never_replayed(exposure):
    clock = FakeClock()
    decision = decide_for(
        overload(exposure=exposure),
        clock=clock,
        budget=budget_after(1, clock=clock),
        fallbacks=["b"],
    )

    assert decision.action is Action.MANUAL
    assert "partial answer is kept" in decision.message


def test_a_failure_after_held_metadata_only_is_still_retried():
    clock = FakeClock()
    decision = decide_for(
        overload(exposure=Exposure.METADATA), clock=clock, budget=budget_after(1, clock=clock)
    )
    assert decision.action is Action.RETRY


def test_hard_and_unclassified_failures_go_to_manual_recovery():
    clock = FakeClock()
    budget = budget_after(1, clock=clock)
    auth = Evidence(source=Source.HTTP, status=401, excerpt="Unauthorized")
    unknown = Evidence(source=Source.EXIT, excerpt="exit status 3")

    auth_decision = decide_for(auth, clock=clock, budget=budget, fallbacks=["b"])
    unknown_decision = decide_for(unknown, clock=clock, budget=budget, fallbacks=["b"])

    assert auth_decision.action is Action.MANUAL
    assert auth_decision.message == (
        "Authentication required. Ask an operator to check this target's credentials, then resume."
    )
    assert unknown_decision.action is Action.MANUAL
    assert unknown_decision.classification.code is Code.UNCLASSIFIED


def test_a_withdrawn_model_fails_over_because_its_code_is_fallback_eligible():
    clock = FakeClock()
    evidence = Evidence(
        source=Source.HTTP,
        status=404,
        excerpt=json.dumps({"error": {"code": "model_not_found", "message": "no such model"}}),
    )
    decision = decide_for(
        evidence, clock=clock, budget=budget_after(1, clock=clock), fallbacks=["b"]
    )
    assert (decision.action, decision.target) == (Action.FAILOVER, "b")


def test_a_rate_limit_reset_inside_the_budget_is_waited_for_exactly():
    clock = FakeClock()
    evidence = Evidence(
        source=Source.HTTP,
        status=429,
        excerpt="Too Many Requests",
        retry_after_ms=1_000,
        reset_at_ms=int((clock.now() + 90) * 1000),
    )
    decision = decide_for(evidence, clock=clock, budget=budget_after(1, clock=clock))

    assert (decision.action, decision.wait_s, decision.retry_at) == (
        Action.WAIT_FOR_RESET,
        90.0,
        clock.now() + 90,
    )
    assert (
        decision.message
        == "Rate limited. Waiting 1 min 30 s for the limit to reset (attempt 1 of 5)."
    )


def test_a_rate_limit_reset_sooner_than_the_ladder_just_retries_on_the_ladder():
    clock = FakeClock()
    evidence = Evidence(
        source=Source.HTTP, status=429, excerpt="", reset_at_ms=int((clock.now() + 3) * 1000)
    )
    decision = decide_for(evidence, clock=clock, budget=budget_after(1, clock=clock))
    assert (decision.action, decision.wait_s) == (Action.RETRY, 5.0)


def test_a_quota_that_resets_in_hours_hands_back_and_says_when():
    clock = FakeClock()
    evidence = Evidence(
        source=Source.ACP_CHUNK,
        excerpt=(
            "You have reached your current quota for this period. Your limit will reset in 3 hours."
        ),
    )
    decision = decide_for(
        evidence, clock=clock, budget=budget_after(1, clock=clock), fallbacks=["b"]
    )

    assert decision.action is Action.MANUAL
    assert decision.message == "Usage quota reached. The limit resets in about 3 hours."


def test_a_rate_limit_reset_beyond_the_budget_hands_back_and_says_when():
    clock = FakeClock()
    evidence = Evidence(
        source=Source.HTTP, status=429, excerpt="", reset_at_ms=int((clock.now() + 600) * 1000)
    )
    decision = decide_for(evidence, clock=clock, budget=budget_after(1, clock=clock))

    assert decision.action is Action.MANUAL
    assert decision.message == "Rate limited. The limit resets in 10 min."


def test_a_truncated_stream_before_output_is_retried():
    clock = FakeClock()
    evidence = Evidence(source=Source.SSE, status=200, kind=Kind.TRUNCATED, excerpt="")
    decision = decide_for(evidence, clock=clock, budget=budget_after(1, clock=clock))
    assert (decision.action, decision.classification.code) == (Action.RETRY, Code.TRUNCATED_STREAM)


@pytest.mark.parametrize(
    ("seconds", "phrase"),
    [
        (0, "0 s"),
        (4.2, "5 s"),
        (60, "1 min"),
        (90, "1 min 30 s"),
        (3600, "about 1 hour"),
        (10_800, "about 3 hours"),
        (172_800, "about 2 days"),
    ],
)
def test_durations_read_plainly(seconds, phrase):
    assert duration_phrase(seconds) == phrase
