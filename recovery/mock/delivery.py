"""Sending a rendered reply: error responses, SSE streams with their pauses and cuts, whole bodies.

Each pause polls the transport, so a client that goes away (Stop, a guard timeout) ends the
handler at once and the request log says it disconnected.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

from aiohttp import web

from recovery.mock.errors import ErrorResponse
from recovery.mock.steps import Delay, Drop, Emitted, Finish, Malformed, Plan, StreamError
from recovery.mock.wires import Wire

_REASONS = {529: "Overloaded"}
_POLL_S = 0.02  # how often a sleeping handler checks whether the client went away
_FLUSH_BYTES = 16 * 1024


class ClientGone(Exception):
    """The client closed the connection while the handler was still sending."""


def error_response(error: ErrorResponse) -> web.Response:
    return web.Response(
        status=error.status,
        reason=_REASONS.get(error.status),
        body=error.encoded(),
        headers=error.headers,
        content_type="application/json",
    )


async def whole_send(
    request: web.Request, wire: Wire, plan: Plan, entry: dict, render: Callable[[], dict]
) -> web.StreamResponse:
    """A non-streamed reply: the plan's pauses, then one body (or the failure it scripts).
    ``render`` is called only when the plan gets that far: a failing plan may hold a half-made
    tool call that has no whole form."""
    for step in plan.steps:
        match step:
            case Delay(ms=ms):
                try:
                    await _sleep(request, ms)
                except ClientGone:
                    entry["disconnected"] = True
                    return web.Response(status=499)
            case StreamError(fail=fail):
                error = wire.error(fail)
                entry.update(status=error.status, completed=True)
                return error_response(error)
            case Drop():
                entry.update(status=200, dropped=True)
                if request.transport is not None:  # None once the client has gone
                    request.transport.abort()
                return web.Response(status=200)
            case Malformed():
                entry.update(status=200, completed=True)
                return web.Response(
                    status=200, body=b'{"id": "broken', content_type="application/json"
                )
    entry.update(status=200, completed=True)
    if not any(isinstance(step, Finish) for step in plan.steps):
        return web.Response(status=200, body=b'{"id": "cut short', content_type="application/json")
    return web.json_response(render())


async def stream_send(
    request: web.Request, emitted: Iterator[Emitted], entry: dict
) -> web.StreamResponse:
    response = web.StreamResponse(
        status=200, headers={"content-type": "text/event-stream", "cache-control": "no-cache"}
    )
    entry["status"] = 200
    try:
        await response.prepare(request)
        pending = bytearray()
        for item in emitted:
            if isinstance(item, bytes):
                pending += item
                if len(pending) >= _FLUSH_BYTES:
                    await _write(request, response, pending)
                continue
            await _write(request, response, pending)
            if isinstance(item, Drop):
                entry["dropped"] = True
                if request.transport is not None:  # None once the client has gone
                    request.transport.abort()
                return response
            await _sleep(request, item.ms)
        await _write(request, response, pending)
        await response.write_eof()
        entry["completed"] = True
    except (ClientGone, ConnectionResetError, ConnectionError):
        entry["disconnected"] = True
    return response


async def _write(request: web.Request, response: web.StreamResponse, pending: bytearray) -> None:
    if not pending:
        return
    if _client_gone(request):
        raise ClientGone
    await response.write(bytes(pending))
    pending.clear()


def _client_gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


async def _sleep(request: web.Request, ms: int) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ms / 1000
    while (remaining := deadline - loop.time()) > 0:
        if _client_gone(request):
            raise ClientGone
        await asyncio.sleep(min(_POLL_S, remaining))
    if _client_gone(request):
        raise ClientGone
