"""The budget: settings from the environment, attempts and waits, deadline, JSON round trip."""

from __future__ import annotations

import json

import pytest

from recovery.budget import Budget, RetrySettings
from recovery.clock import FakeClock


def test_defaults_are_the_interactive_ladder():
    settings = RetrySettings()
    assert (settings.delays_s, settings.max_attempts, settings.jitter) == (
        (5, 10, 20, 40, 60),
        5,
        0.2,
    )
    assert (settings.deadline_s, settings.retry_after_cap_s) == (150.0, 60.0)


def test_settings_are_read_from_the_environment():
    settings = RetrySettings.from_env(
        {
            "KANDEV_RETRY_DELAYS": "1, 2,3.5",
            "KANDEV_RETRY_MAX_ATTEMPTS": "3",
            "KANDEV_RETRY_JITTER": "0",
            "KANDEV_RETRY_DEADLINE": "30",
        }
    )
    assert settings == RetrySettings(delays_s=(1, 2, 3.5), max_attempts=3, jitter=0, deadline_s=30)


def test_an_empty_environment_gives_the_defaults():
    assert RetrySettings.from_env({}) == RetrySettings()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("KANDEV_RETRY_DELAYS", "5,ten"),
        ("KANDEV_RETRY_DELAYS", "5,-1"),
        ("KANDEV_RETRY_DELAYS", ""),
        ("KANDEV_RETRY_MAX_ATTEMPTS", "-1"),
        ("KANDEV_RETRY_MAX_ATTEMPTS", "2.5"),
        ("KANDEV_RETRY_JITTER", "1.5"),
        ("KANDEV_RETRY_JITTER", "nan"),
        ("KANDEV_RETRY_DEADLINE", "-3"),
        ("KANDEV_RETRY_DEADLINE", "inf"),
    ],
)
def test_a_bad_setting_is_refused_naming_the_variable(name, value):
    with pytest.raises(ValueError, match=name):
        RetrySettings.from_env({name: value})


def test_the_ladder_delay_after_attempt_k_is_the_kth_delay_and_the_last_repeats():
    settings = RetrySettings()
    assert [settings.delay_after_s(k) for k in range(1, 8)] == [5, 10, 20, 40, 60, 60, 60]


def test_a_budget_counts_attempts_waits_and_visited_targets():
    clock = FakeClock()
    budget = Budget.start(settings=RetrySettings(), clock=clock, target="anthropic/sonnet")

    budget = budget.record_attempt(target="anthropic/sonnet").record_wait(5.5)
    budget = budget.record_attempt(target="anthropic/sonnet").record_attempt(target="openai/gpt")

    assert (budget.attempts, budget.retries) == (3, 2)
    assert budget.attempts_left == 3  # five retries allowed after the first call
    assert budget.waited_s == 5.5
    assert budget.visited_targets == ("anthropic/sonnet", "openai/gpt")


def test_the_deadline_runs_on_the_wall_clock_from_the_first_failure():
    clock = FakeClock()
    budget = Budget.start(settings=RetrySettings(deadline_s=150), clock=clock, target="a")
    budget = budget.record_failure(clock=clock)

    clock.advance(100)
    assert budget.remaining_s(clock=clock) == 50
    clock.advance(80)
    assert budget.remaining_s(clock=clock) == 0


def test_a_budget_survives_a_json_round_trip():
    clock = FakeClock()
    budget = (
        Budget.start(
            settings=RetrySettings(delays_s=(1, 2), max_attempts=4), clock=clock, target="a"
        )
        .record_attempt(target="a")
        .record_wait(1.25)
        .record_attempt(target="b")
    )

    assert Budget.from_dict(json.loads(json.dumps(budget.to_dict()))) == budget


def test_a_negative_wait_is_refused():
    budget = Budget.start(settings=RetrySettings(), clock=FakeClock(), target="a")
    with pytest.raises(ValueError):
        budget.record_wait(-1)


def test_the_fake_clock_moves_only_when_told_and_never_backwards():
    clock = FakeClock(start=1000.0)
    assert (clock.now(), clock.monotonic()) == (1000.0, 0.0)
    clock.advance(2.5)
    assert (clock.now(), clock.monotonic()) == (1002.5, 2.5)
    clock.set(5.0)
    assert (clock.now(), clock.monotonic()) == (5.0, 2.5)
    with pytest.raises(ValueError):
        clock.advance(-1)


def test_the_deadline_runs_per_call_from_its_first_failure():
    clock = FakeClock()
    budget = Budget.start(settings=RetrySettings(deadline_s=150), clock=clock, target="a")
    clock.advance(165)  # a first call and a tool took 165 s; the second call fails now

    budget = budget.record_attempt(target="a").record_failure(clock=clock)
    assert budget.remaining_s(clock=clock) == 150
    clock.advance(100)
    assert budget.record_failure(clock=clock).remaining_s(clock=clock) == 50  # the first counts
    assert budget.elapsed_s(clock=clock) == 100


def test_a_call_that_succeeded_leaves_the_next_call_a_fresh_ladder():
    clock = FakeClock()
    settings = RetrySettings(max_attempts=2, deadline_s=150)
    budget = Budget.start(settings=settings, clock=clock, target="a").record_attempt(target="a")
    budget = budget.record_failure(clock=clock).record_attempt(target="a")
    clock.advance(140)
    assert (budget.attempts_left, budget.remaining_s(clock=clock)) == (1, 10)

    budget = budget.record_call_success()
    assert (budget.attempts_left, budget.remaining_s(clock=clock)) == (2, 150)
    # The next call's retries then walk its own ladder: attempt 1, then 2.
    assert budget.retries == 0
    assert budget.record_attempt(target="a").retries == 1


def test_the_turn_cap_bounds_every_call_of_the_turn_together():
    clock = FakeClock()
    settings = RetrySettings(deadline_s=150, turn_cap_s=200)
    budget = Budget.start(settings=settings, clock=clock, target="a")
    clock.advance(180)

    budget = budget.record_failure(clock=clock)
    assert budget.remaining_s(clock=clock) == 20
    assert budget.turn_cap_binds(clock=clock)


def test_the_turn_cap_defaults_to_ten_minutes_or_the_deadline_if_longer():
    assert RetrySettings().turn_cap == 600
    assert RetrySettings(deadline_s=900).turn_cap == 900
    assert RetrySettings.from_env({"KANDEV_RETRY_TURN_CAP": "1200"}).turn_cap == 1200


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"KANDEV_RETRY_TURN_CAP": "ten"}, "KANDEV_RETRY_TURN_CAP must be a number"),
        ({"KANDEV_RETRY_TURN_CAP": "nan"}, "KANDEV_RETRY_TURN_CAP must be a finite"),
        ({"KANDEV_RETRY_TURN_CAP": "100"}, "at least KANDEV_RETRY_DEADLINE"),
        (
            {"KANDEV_RETRY_TURN_CAP": "300", "KANDEV_RETRY_DEADLINE": "400"},
            r"at least KANDEV_RETRY_DEADLINE \(400 s\)",
        ),
    ],
)
def test_a_bad_turn_cap_is_refused_naming_the_variable(environ, message):
    with pytest.raises(ValueError, match=message):
        RetrySettings.from_env(environ)


def test_a_budget_persisted_before_per_call_deadlines_still_loads():
    clock = FakeClock()
    data = Budget.start(settings=RetrySettings(), clock=clock, target="a").to_dict()
    del data["call_failed_at"], data["settings"]["turn_cap_s"]

    loaded = Budget.from_dict(data)
    assert (loaded.call_failed_at, loaded.settings.turn_cap) == (clock.now(), 600)


def test_the_retry_after_cap_is_read_from_the_environment():
    # One cap for a turn's own Retry-After and a target's shared hold (recovery.circuit).
    assert RetrySettings.from_env({"KANDEV_RETRY_AFTER_CAP_S": "30"}).retry_after_cap_s == 30
    with pytest.raises(ValueError, match="KANDEV_RETRY_AFTER_CAP_S"):
        RetrySettings.from_env({"KANDEV_RETRY_AFTER_CAP_S": "-1"})
