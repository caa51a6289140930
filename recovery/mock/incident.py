"""A time-boxed provider incident: every model request fails until it ends, whatever its scenario.

Scenarios fail a conversation a number of times; an incident fails the whole provider for a span
of time, which is what a real overload looks like to many sessions at once (benchmarks, chaos
tests). The span is measured on the server's monotonic clock (injected, so tests need not wait),
and a request failed by an incident does not count as a scenario attempt: once the incident ends,
each conversation continues its own scenario where it was.

    POST   /_mock/incident  {"seconds": 30, "status": 529, "retry_after": 2?}  start (or replace)
    GET    /_mock/incident                                                   what is going on
    DELETE /_mock/incident                                                   end it now
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from aiohttp import web

from recovery.mock.steps import Fail, Failure

MAX_SECONDS = 3600.0
# Statuses an overloaded or throttled provider really answers with, and what each one means.
_FAILURE_FOR_STATUS = {
    529: Failure.OVERLOADED,
    503: Failure.OVERLOADED,
    429: Failure.RATE_LIMITED,
    500: Failure.SERVER_ERROR,
    502: Failure.SERVER_ERROR,
}


@dataclass(frozen=True, slots=True)
class Incident:
    number: int
    status: int
    started_at: float  # server monotonic seconds
    ends_at: float
    retry_after_s: int | None = None
    failed: int = 0  # model requests this incident failed
    ended_early: bool = False

    def active(self, now: float) -> bool:
        return not self.ended_early and now < self.ends_at

    def fail(self) -> Fail:
        return Fail(_FAILURE_FOR_STATUS[self.status], self.status, self.retry_after_s)

    def describe(self, now: float) -> dict:
        return {
            "number": self.number,
            "status": self.status,
            "active": self.active(now),
            "remaining_s": max(0.0, self.ends_at - now) if self.active(now) else 0.0,
            "elapsed_s": min(now, self.ends_at) - self.started_at,
            "failed": self.failed,
            "ended_early": self.ended_early,
        }


class IncidentBook:
    """The app's incidents, newest last. Mutated only on the server's event loop."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.monotonic = monotonic
        self.incidents: list[Incident] = []

    @property
    def latest(self) -> Incident | None:
        return self.incidents[-1] if self.incidents else None

    def start(self, *, seconds: float, status: int, retry_after_s: int | None) -> Incident:
        self.end()  # a new incident replaces a running one rather than stacking
        now = self.monotonic()
        incident = Incident(len(self.incidents) + 1, status, now, now + seconds, retry_after_s)
        self.incidents.append(incident)
        return incident

    def end(self) -> Incident | None:
        latest, now = self.latest, self.monotonic()
        if latest is None or not latest.active(now):
            return None
        self.incidents[-1] = ended = replace(latest, ends_at=now, ended_early=True)
        return ended

    def reset(self) -> None:
        self.incidents.clear()

    def failing(self) -> Incident | None:
        """The running incident, counting one more failed request; None when the provider is up."""
        latest = self.latest
        if latest is None or not latest.active(self.monotonic()):
            return None
        self.incidents[-1] = counted = replace(latest, failed=latest.failed + 1)
        return counted

    def describe(self) -> dict:
        now = self.monotonic()
        latest = self.latest
        return {
            "active": latest is not None and latest.active(now),
            "incident": latest.describe(now) if latest else None,
            "history": [incident.describe(now) for incident in self.incidents],
        }


INCIDENT_KEY = web.AppKey("mock_incidents", IncidentBook)


def add_routes(app: web.Application) -> None:
    app.router.add_post("/_mock/incident", _start)
    app.router.add_get("/_mock/incident", _show)
    app.router.add_delete("/_mock/incident", _end)


def _bad(message: str) -> web.Response:
    return web.json_response({"error": message}, status=400)


async def _start(request: web.Request) -> web.Response:
    try:
        payload = await request.json()
    except ValueError:
        return _bad("expected a JSON body {seconds, status?, retry_after?}")
    if not isinstance(payload, dict):
        return _bad("expected a JSON object {seconds, status?, retry_after?}")
    seconds, status = payload.get("seconds"), payload.get("status", 529)
    retry_after = payload.get("retry_after")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return _bad("seconds must be a number")
    if not 0 < seconds <= MAX_SECONDS:
        return _bad(f"seconds must be in (0, {MAX_SECONDS:.0f}]")
    if status not in _FAILURE_FOR_STATUS:
        return _bad(f"status must be one of {sorted(_FAILURE_FOR_STATUS)}")
    if retry_after is not None and (
        isinstance(retry_after, bool) or not isinstance(retry_after, int) or retry_after < 0
    ):
        return _bad("retry_after must be a whole number of seconds")
    book = request.app[INCIDENT_KEY]
    book.start(seconds=float(seconds), status=status, retry_after_s=retry_after)
    return web.json_response(book.describe())


async def _show(request: web.Request) -> web.Response:
    return web.json_response(request.app[INCIDENT_KEY].describe())


async def _end(request: web.Request) -> web.Response:
    book = request.app[INCIDENT_KEY]
    book.end()
    return web.json_response(book.describe())
