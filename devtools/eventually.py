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
    deadline = clock() + timeout
    while True:
        try:
            value = condition()
        except AssertionError as error:
            last = _assertion(error)
        else:
            if until(value):
                return value
            last = repr(value)
        if clock() >= deadline:
            raise AssertionError(_failure(what, timeout, last))
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
    deadline = loop.time() + timeout
    while True:
        try:
            value = condition()
            if inspect.isawaitable(value):
                value = await value
        except AssertionError as error:
            last = _assertion(error)
        else:
            if until(value):
                return value
            last = repr(value)
        if loop.time() >= deadline:
            raise AssertionError(_failure(what, timeout, last))
        await asyncio.sleep(interval)


def _assertion(error: AssertionError) -> str:
    return f"AssertionError: {error}" if str(error) else "AssertionError"


def _failure(what: str, timeout: float, last: str) -> str:
    return f"{what}: not within {timeout:g} s; the last check gave {last}"
