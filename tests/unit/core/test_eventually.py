"""eventually(): the one bounded wait, on an injected clock (nothing here sleeps)."""

from __future__ import annotations

import pytest

from devtools.eventually import eventually, eventually_async


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def answers(*values):
    given = iter(values)
    return lambda: next(given)


def test_it_returns_the_first_truthy_value_the_condition_gives():
    time = FakeTime()
    found = eventually(
        answers(None, [], ["row"]), timeout=5, what="a row", clock=time.clock, sleep=time.sleep
    )
    assert found == ["row"]
    assert time.slept == [0.05, 0.05]


def test_it_fails_naming_what_it_waited_for_and_the_last_value_seen():
    time = FakeTime()
    with pytest.raises(AssertionError, match=r"^a healthy app: not within 1 s; .* gave 503$"):
        eventually(
            answers(503, 503, 503, 503, 503),
            until=lambda status: status == 200,
            timeout=1,
            what="a healthy app",
            interval=0.25,
            clock=time.clock,
            sleep=time.sleep,
        )
    assert time.slept == [0.25] * 4


def test_until_decides_which_value_ends_the_wait():
    time = FakeTime()
    state = eventually(
        answers("queued", "running", "succeeded"),
        until=lambda state: state not in ("queued", "running"),
        timeout=5,
        what="the generation to end",
        clock=time.clock,
        sleep=time.sleep,
    )
    assert state == "succeeded"


def test_a_condition_may_assert_until_it_holds():
    time = FakeTime()

    def answered():
        assert time.now >= 0.1, "no answer yet"
        return "answer"

    found = eventually(answered, timeout=1, what="an answer", clock=time.clock, sleep=time.sleep)
    assert found == "answer"


def test_a_condition_that_never_stops_asserting_fails_with_its_assertion():
    time = FakeTime()

    def answered():
        raise AssertionError("no answer yet")

    with pytest.raises(AssertionError, match=r"gave AssertionError: no answer yet$"):
        eventually(answered, timeout=0.2, what="an answer", clock=time.clock, sleep=time.sleep)


def test_any_other_error_of_the_condition_ends_the_wait_at_once():
    time = FakeTime()
    with pytest.raises(ZeroDivisionError):
        eventually(lambda: 1 / 0, timeout=5, what="x", clock=time.clock, sleep=time.sleep)
    assert time.slept == []


async def test_the_async_form_awaits_a_coroutine_condition():
    left = [False, False, True]

    async def ready():
        return left.pop(0)

    assert await eventually_async(ready, timeout=5, what="ready", interval=0) is True
    assert left == []


async def test_the_async_form_fails_with_the_last_value():
    with pytest.raises(AssertionError, match=r"^blocked: not within 0 s; the last check gave 0$"):
        await eventually_async(lambda: 0, timeout=0, what="blocked")
