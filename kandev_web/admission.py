"""Fair admission to a Daphne process's sync thread: each caller a few requests at a time.

Django runs every sync view and middleware of an ASGI process on one thread, first come, first
served. A person who sends 60 requests at once therefore puts everyone else's request behind all
60, even when each of them is only refused by a cap (bench_caps measures that wait). This
middleware, the outermost, runs on the event loop: each
caller (one API token, or one login session) has at most KANDEV_USER_REQUESTS_AT_ONCE requests in
the sync thread's line; the rest wait here, on the loop, costing no thread and no query. Nothing is
refused, only ordered; a request without credentials passes straight through (the login page has
its own throttle).

Scheduling this process's own thread is this process's business, so the gates live in its memory.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from asgiref.sync import markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponse


def credential_of(request: HttpRequest) -> str | None:
    """Who is asking, as far as can be told without a query: a digest of the bearer token or of
    the login session's cookie; None for an anonymous request."""
    authorization = request.headers.get("Authorization", "")
    if authorization.lower().startswith("bearer ") and len(authorization) > 7:
        raw = f"token:{authorization[7:].strip()}"
    elif cookie := request.COOKIES.get(settings.SESSION_COOKIE_NAME):
        raw = f"session:{cookie}"
    else:
        return None
    return hashlib.sha256(raw.encode("utf-8", "replace")).hexdigest()


@dataclass(slots=True)
class _Gate:
    at_once: asyncio.Semaphore
    users: int = field(default=0)


class CredentialAdmission:
    async_capable = True
    sync_capable = False

    def __init__(self, get_response: Callable[[HttpRequest], Awaitable[HttpResponse]]) -> None:
        self.get_response = get_response
        # One event loop per Daphne process: the gates are touched only from it.
        self.gates: dict[str, _Gate] = {}
        markcoroutinefunction(self)

    async def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = settings.KANDEV_USER_REQUESTS_AT_ONCE
        key = credential_of(request) if limit else None
        if key is None:
            return await self.get_response(request)
        gate = self.gates.get(key)
        if gate is None:
            gate = self.gates[key] = _Gate(asyncio.Semaphore(limit))
        gate.users += 1
        try:
            async with gate.at_once:
                return await self.get_response(request)
        finally:
            gate.users -= 1
            if not gate.users:
                del self.gates[key]
