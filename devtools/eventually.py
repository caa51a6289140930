"""Waiting for something another thread or process does: one bounded poll for every test and
benchmark, so none writes its own deadline loop.

``eventually`` calls a condition until it holds and hands back what it returned; a condition may
also raise AssertionError while it does not hold yet (so it can be written as asserts). With
``until``, the condition is a probe (a state, a status, a list of rows) and ``until`` says which
of its values ends the wait, so a failure shows the value seen, not just False. When the
time is up it fails with what was awaited and the last value (or assertion) the condition gave,
which is what a reader of a failed run needs first. The interval only paces the polling; what
ends the wait is always the condition. Clock and sleep are injected for tests of the helper.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any


def eventually[T](
    condition: Callable[[], T],
    *,
    timeout: float,
    what: str,
    interval: float = 0.05,
    until: Callable[[T], object] = bool,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], object] = time.sleep,
) -> T:
    """The first value of ``condition()`` that ``until`` accepts (by default: the first truthy
    one) within ``timeout`` seconds."""
    wait = _Wait(what=what, timeout=timeout, until=until, started=clock())
    while True:
        value = _called(condition)
        if wait.accepts(value):
            return value
        wait.give_up_at(clock())
        sleep(interval)


async def eventually_async[T](
    condition: Callable[[], T | Awaitable[T]],
    *,
    timeout: float,
    what: str,
    interval: float = 0.05,
    until: Callable[[T], object] = bool,
) -> T:
    """``eventually`` for a coroutine: ``condition`` may be sync or async, and the wait yields to
    the event loop between polls."""
    loop = asyncio.get_running_loop()
    wait = _Wait(what=what, timeout=timeout, until=until, started=loop.time())
    while True:
        value = await _awaited(condition)
        if wait.accepts(value):
            return value
        wait.give_up_at(loop.time())
        await asyncio.sleep(interval)


class _Refused:
    """A check that raised AssertionError: the condition does not hold yet."""

    def __init__(self, error: AssertionError) -> None:
        self.error = error

    def __repr__(self) -> str:
        return f"AssertionError: {self.error}" if str(self.error) else "AssertionError"


def _called(condition: Callable[[], Any]) -> Any:
    try:
        return condition()
    except AssertionError as error:
        return _Refused(error)


async def _awaited(condition: Callable[[], Any]) -> Any:
    try:
        value = condition()
        return (await value) if inspect.isawaitable(value) else value
    except AssertionError as error:
        return _Refused(error)


class _Wait:
    def __init__(
        self, *, what: str, timeout: float, until: Callable[[Any], object], started: float
    ) -> None:
        self.what, self.timeout, self.until = what, timeout, until
        self.deadline = started + timeout
        self.last = "nothing"

    def accepts(self, value: object) -> bool:
        if not isinstance(value, _Refused) and self.until(value):
            return True
        self.last = repr(value)
        return False

    def give_up_at(self, now: float) -> None:
        if now >= self.deadline:
            raise AssertionError(
                f"{self.what}: not within {self.timeout:g} s; the last check gave {self.last}"
            )
