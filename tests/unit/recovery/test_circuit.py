"""The shared circuit and retry budget as values, with time passed in: no Redis, no sleeping."""

from __future__ import annotations

import pytest

from recovery.budget import Budget, RetrySettings
from recovery.circuit import (
    HOLD_LIMIT_S,
    CircuitState,
    HealthSettings,
    Refusal,
    TargetHealth,
    TransitionKind,
    admit,
    record_failure,
    record_success,
)
from recovery.clock import FakeClock
from recovery.policy import Action, SharedHold, defer_decision
from recovery.taxonomy import Code

SETTINGS = HealthSettings(failures_to_open=3, window_s=30, open_s=10, open_max_s=40)
T0 = 1_800_000_000.0  # a minute boundary
OVERLOADED = str(Code.PROVIDER_OVERLOADED)


def fail(health, now, *, code=OVERLOADED, retry_after_s=0.0, settings=SETTINGS):
    return record_failure(
        health, settings=settings, now=now, code=code, retry_after_s=retry_after_s
    )


def opened(now=T0) -> TargetHealth:
    health = TargetHealth()
    for offset in range(SETTINGS.failures_to_open):
        health, _ = fail(health, now + offset)
    return health


def test_it_opens_after_the_set_number_of_failures_within_the_window():
    health = TargetHealth()
    health, first = fail(health, T0)
    health, second = fail(health, T0 + 1)
    assert (health.state, first, second) == (CircuitState.CLOSED, None, None)
    health, third = fail(health, T0 + 2)
    assert health.state is CircuitState.OPEN
    assert (third.kind, third.until, third.code) == (TransitionKind.HOLD, T0 + 12, OVERLOADED)


def test_failures_spread_wider_than_the_window_never_open_it():
    health = TargetHealth()
    for step in range(6):
        health, _ = fail(health, T0 + step * 20)
    assert health.state is CircuitState.CLOSED


def test_a_failure_of_one_conversation_does_not_count():
    health = TargetHealth()
    for step in range(5):
        health, _ = fail(health, T0 + step, code=str(Code.TRUNCATED_STREAM))
    assert health.state is CircuitState.CLOSED


def test_while_open_every_call_waits_for_the_end_of_the_open_time():
    health = opened()
    health, admission = admit(health, settings=SETTINGS, now=T0 + 5, retry=False)
    assert (admission.allowed, admission.refusal) == (False, Refusal.CIRCUIT_OPEN)
    assert (admission.retry_at, admission.code) == (T0 + 12, OVERLOADED)


def test_once_open_long_enough_exactly_one_call_is_the_probe():
    health = opened()
    health, probe = admit(health, settings=SETTINGS, now=T0 + 12, retry=True)
    health, other = admit(health, settings=SETTINGS, now=T0 + 12.5, retry=True)
    assert (probe.allowed, probe.probe) == (True, True)
    assert health.state is CircuitState.HALF_OPEN
    assert (other.allowed, other.refusal) == (False, Refusal.PROBE_IN_FLIGHT)
    assert other.retry_at == T0 + 12 + SETTINGS.probe_timeout_s


def test_a_lost_probe_is_replaced_after_its_timeout():
    health = opened()
    health, _ = admit(health, settings=SETTINGS, now=T0 + 12, retry=True)
    later = T0 + 12 + SETTINGS.probe_timeout_s
    health, replacement = admit(health, settings=SETTINGS, now=later, retry=True)
    assert (replacement.allowed, replacement.probe) == (True, True)


def test_a_failed_probe_opens_it_again_for_twice_as_long_up_to_the_cap():
    health = opened()
    untils = []
    now = T0 + 12
    for _ in range(4):
        health, _ = admit(health, settings=SETTINGS, now=now, retry=True)
        health, transition = fail(health, now)
        untils.append(transition.until - now)
        now = transition.until
    assert untils == [20, 40, 40, 40]
    assert health.state is CircuitState.OPEN


def test_a_successful_probe_closes_it_and_releases_the_waiting_turns():
    health = opened()
    health, _ = admit(health, settings=SETTINGS, now=T0 + 12, retry=True)
    health, transition = record_success(health, settings=SETTINGS, now=T0 + 13)
    assert health.state is CircuitState.CLOSED
    assert (transition.kind, transition.until) == (TransitionKind.RELEASE, T0 + 13)
    health, admission = admit(health, settings=SETTINGS, now=T0 + 13, retry=True)
    assert admission.allowed


def test_a_success_while_healthy_releases_nothing():
    _, transition = record_success(TargetHealth(), settings=SETTINGS, now=T0)
    assert transition is None


def test_retry_after_from_one_response_holds_every_call_of_the_target():
    health, transition = fail(TargetHealth(), T0, code=str(Code.RATE_LIMITED), retry_after_s=25)
    assert (transition.kind, transition.until) == (TransitionKind.HOLD, T0 + 25)
    _, first_call = admit(health, settings=SETTINGS, now=T0 + 1, retry=False)
    assert (first_call.allowed, first_call.refusal, first_call.retry_at) == (
        False,
        Refusal.RETRY_AFTER,
        T0 + 25,
    )
    _, after = admit(health, settings=SETTINGS, now=T0 + 25, retry=False)
    assert after.allowed


def test_a_shared_retry_after_keeps_the_wait_asked_and_who_was_told():
    # Not shortened to a cap: a held turn is judged against the retry policy's cap (and handed
    # back past it) as the turn given the Retry-After was, not sent early to be refused again.
    health, transition = record_failure(
        TargetHealth(),
        settings=SETTINGS,
        now=T0,
        code="provider_overloaded",
        retry_after_s=3600,
        by="42",
    )
    assert transition.until == T0 + 3600
    _, held = admit(health, settings=SETTINGS, now=T0 + 600, retry=False)
    assert (held.refusal, held.retry_at, held.asked_s, held.held_by) == (
        Refusal.RETRY_AFTER,
        T0 + 3600,
        3600,
        "42",
    )


def test_an_absurd_shared_retry_after_is_bounded():
    _, transition = fail(TargetHealth(), T0, retry_after_s=1e12)
    assert transition.until == T0 + HOLD_LIMIT_S


def test_retries_are_held_to_their_share_of_the_minutes_requests():
    budget = HealthSettings(retry_ratio=0.2, retry_floor_per_min=1)
    health = TargetHealth()
    for second in range(20):  # 20 first calls
        health, admission = admit(health, settings=budget, now=T0 + second, retry=False)
        assert admission.allowed
    granted = 0
    for second in range(20, 40):
        health, admission = admit(health, settings=budget, now=T0 + second, retry=True)
        if admission.allowed:
            granted += 1
        else:
            assert (admission.refusal, admission.retry_at) == (Refusal.RETRY_BUDGET, T0 + 60)
    # 20 % of what was admitted, retries included: r <= 0.2 * (20 + r) -> r = 5.
    assert granted == 5


def test_a_quiet_target_still_gets_the_floor_of_retries():
    budget = HealthSettings(retry_ratio=0.2, retry_floor_per_min=3)
    health = TargetHealth()
    results = []
    for second in range(5):
        health, admission = admit(health, settings=budget, now=T0 + second, retry=True)
        results.append(admission.allowed)
    assert results == [True, True, True, False, False]


def test_the_previous_minute_weighs_less_as_the_window_slides():
    budget = HealthSettings(retry_ratio=0.5, retry_floor_per_min=0)
    health = TargetHealth()
    for second in range(10):
        health, _ = admit(health, settings=budget, now=T0 + second, retry=False)
    health, early = admit(health, settings=budget, now=T0 + 61, retry=True)
    assert early.allowed  # ~9.8 requests still in the window: room for 4
    for _ in range(4):
        health, _ = admit(health, settings=budget, now=T0 + 61, retry=True)
    health, late = admit(health, settings=budget, now=T0 + 118, retry=True)
    assert not late.allowed  # the first minute has almost slid out of the window


def test_turns_released_by_a_successful_probe_are_not_throttled():
    budget = HealthSettings(failures_to_open=1, open_s=10, retry_floor_per_min=1)
    health, _ = fail(TargetHealth(), T0, settings=budget)
    health, _ = admit(health, settings=budget, now=T0 + 10, retry=True)
    health, _ = record_success(health, settings=budget, now=T0 + 11)
    allowed = []
    for _ in range(20):
        health, admission = admit(health, settings=budget, now=T0 + 12, retry=True)
        allowed.append(admission.allowed)
    assert all(allowed)


def test_switched_off_it_admits_everything_and_learns_nothing():
    off = HealthSettings(enabled=False)
    health = TargetHealth()
    for second in range(10):
        health, transition = fail(health, T0 + second, retry_after_s=30, settings=off)
        assert transition is None
    _, admission = admit(health, settings=off, now=T0 + 10, retry=True)
    assert admission.allowed


def test_it_survives_being_stored_as_strings():
    health = opened()
    assert TargetHealth.from_dict(health.to_dict()) == health
    assert TargetHealth.from_dict({}) == TargetHealth()
    assert TargetHealth.from_dict({"failures": "many"}) == TargetHealth()


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("KANDEV_CIRCUIT_FAILURES", "0", "at least 1"),
        ("KANDEV_CIRCUIT_FAILURES", "five", "whole number"),
        ("KANDEV_CIRCUIT_OPEN_S", "-1", "positive"),
        ("KANDEV_CIRCUIT_WINDOW_S", "nan", "positive"),
        ("KANDEV_CIRCUIT_ENABLED", "maybe", "true or false"),
        ("KANDEV_RETRY_BUDGET_RATIO", "1.5", "between 0 and 1"),
        ("KANDEV_RETRY_BUDGET_FLOOR", "-2", "zero or more"),
    ],
)
def test_a_bad_setting_names_its_variable(name, value, message):
    with pytest.raises(ValueError, match=name) as raised:
        HealthSettings.from_env({name: value})
    assert message in str(raised.value)


def test_open_max_below_open_is_refused():
    with pytest.raises(ValueError, match="KANDEV_CIRCUIT_OPEN_MAX_S"):
        HealthSettings.from_env({"KANDEV_CIRCUIT_OPEN_S": "30", "KANDEV_CIRCUIT_OPEN_MAX_S": "10"})


def test_settings_come_from_the_environment():
    parsed = HealthSettings.from_env(
        {
            "KANDEV_CIRCUIT_FAILURES": "8",
            "KANDEV_CIRCUIT_ENABLED": "off",
            "KANDEV_RETRY_BUDGET_RATIO": "0.1",
        }
    )
    assert (parsed.failures_to_open, parsed.enabled, parsed.retry_ratio) == (8, False, 0.1)


def test_a_deferred_call_spends_no_attempt_and_waits_until_the_target_may_be_called():
    clock = FakeClock(T0)
    budget = Budget.start(settings=RetrySettings(), clock=clock, target="Mock").record_attempt(
        target="Mock"
    )
    decision = defer_decision(
        budget=budget, code=Code.PROVIDER_OVERLOADED, reason="Busy for everyone",
        retry_at=T0 + 12, current_target="Mock", clock=clock,
    )  # fmt: skip
    assert (decision.action, decision.wait_s, decision.attempt) == (Action.RETRY, 12, 1)
    assert decision.message == "Busy for everyone. Retrying in 12 s (attempt 1 of 5)."


def test_a_deferral_past_the_calls_deadline_hands_the_turn_back():
    clock = FakeClock(T0)
    budget = Budget.start(settings=RetrySettings(deadline_s=60), clock=clock, target="Mock")
    budget = budget.record_failure(clock=clock)  # the call first failed (or was held) at T0
    clock.advance(50)
    decision = defer_decision(
        budget=budget, code=Code.PROVIDER_OVERLOADED, reason="Busy for everyone",
        retry_at=T0 + 70, current_target="Mock", clock=clock,
    )  # fmt: skip
    assert decision.action is Action.MANUAL
    assert "automatic retries have stopped" in decision.message


def test_a_calls_first_hold_starts_its_deadline():
    clock = FakeClock(T0)
    budget = Budget.start(settings=RetrySettings(deadline_s=60), clock=clock, target="Mock")
    clock.advance(50)  # the turn ran for 50 s (a tool, say) before this call was held

    decision = defer_decision(
        budget=budget, code=Code.PROVIDER_OVERLOADED, reason="Busy for everyone",
        retry_at=T0 + 70, current_target="Mock", clock=clock,
    )  # fmt: skip

    assert decision.action is Action.RETRY  # 20 s of the call's 60 s, not 70 s of the turn's


def test_a_turn_that_has_not_failed_waits_for_a_shared_hold_without_an_attempt_count():
    clock = FakeClock(T0)
    budget = Budget.start(settings=RetrySettings(), clock=clock, target="Mock")
    decision = defer_decision(
        budget=budget, code=Code.PROVIDER_OVERLOADED, reason="Waiting: asked by someone else",
        retry_at=T0 + 30, current_target="Mock", clock=clock, failed_before=False,
        hold=SharedHold(asked_s=30, ours=False),
    )  # fmt: skip
    assert (decision.action, decision.attempt) == (Action.RETRY, 0)
    assert decision.message == "Waiting: asked by someone else. Sending in 30 s."


@pytest.mark.parametrize(
    ("code", "action"),
    [(Code.PROVIDER_OVERLOADED, Action.MANUAL), (Code.RATE_LIMITED, Action.RETRY)],
)
def test_a_shared_hold_past_the_cap_is_judged_as_the_turn_that_was_given_it(code, action):
    # The policy hands a 529's 90 s Retry-After back (past the 60 s cap) and waits for a rate
    # limit's reset within the deadline: a turn held by that Retry-After gets the same answer.
    clock = FakeClock(T0)
    budget = Budget.start(settings=RetrySettings(retry_after_cap_s=60), clock=clock, target="M")
    decision = defer_decision(
        budget=budget, code=code, reason="Waiting", retry_at=T0 + 90, current_target="M",
        clock=clock, failed_before=False, hold=SharedHold(asked_s=90, ours=False),
    )  # fmt: skip
    assert decision.action is action
    if action is Action.MANUAL:
        assert decision.message == (
            "Not sent: the provider asked everyone using this target to wait 1 min 30 s "
            "(another session's request was refused), longer than the longest wait automatic "
            "retry takes (1 min), so your message was not sent automatically. Resume when that "
            "wait is over."
        )
