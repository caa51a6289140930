"""The mock provider: a real aiohttp server speaking Anthropic Messages and OpenAI Chat Completions.

The scenario is the leading command of the last user message (see scenarios.py). Attempts are
counted per conversation, scenario and model call (tool results seen), so a retry of one call
shares a counter and the call after a tool result starts afresh.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from aiohttp import web

from recovery.mock import anthropic_wire, openai_wire
from recovery.mock.errors import ErrorResponse, anthropic_error, openai_error
from recovery.mock.history import History, anthropic_history, openai_history
from recovery.mock.incident import INCIDENT_KEY, IncidentBook
from recovery.mock.incident import add_routes as add_incident_routes
from recovery.mock.scenarios import SCENARIOS, ScenarioRequest, parse_command
from recovery.mock.steps import Delay, Drop, Fail, Failure, Finish, Malformed, Plan, StreamError

ANTHROPIC_PATH = "/v1/messages"
OPENAI_PATH = "/v1/chat/completions"
_REASONS = {529: "Overloaded"}
_POLL_S = 0.02  # how often a sleeping handler checks whether the client went away
_FLUSH_BYTES = 16 * 1024


class ClientGone(Exception):
    """The client closed the connection while the handler was still sending."""


@dataclass
class MockState:
    attempts: dict[tuple[str, str, int], int] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    scripts: list[dict[str, str]] = field(default_factory=list)

    def reset(self) -> None:
        self.attempts.clear()
        self.requests.clear()
        self.scripts.clear()

    def scripted(self, *, model: str, path: str) -> str | None:
        for script in self.scripts:
            if script.get("model", model) == model and script.get("path", path) == path:
                return script["scenario"]
        return None


STATE_KEY = web.AppKey("mock_state", MockState)


def build_app(*, monotonic: Callable[[], float] = time.monotonic) -> web.Application:
    app = web.Application(client_max_size=32 * 1024 * 1024)
    app[STATE_KEY] = MockState()
    app[INCIDENT_KEY] = IncidentBook(monotonic)
    app.router.add_post(ANTHROPIC_PATH, _anthropic)
    app.router.add_post(OPENAI_PATH, _openai)
    app.router.add_get("/_mock/health", _health)
    app.router.add_get("/_mock/requests", _requests)
    app.router.add_post("/_mock/reset", _reset)
    app.router.add_post("/_mock/script", _script)
    add_incident_routes(app)
    return app


async def _health(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


async def _requests(request: web.Request) -> web.Response:
    seen = request.app[STATE_KEY].requests
    return web.json_response({"count": len(seen), "requests": seen})


async def _reset(request: web.Request) -> web.Response:
    request.app[STATE_KEY].reset()
    request.app[INCIDENT_KEY].reset()
    return web.json_response({"ok": True})


async def _script(request: web.Request) -> web.Response:
    payload = await request.json()
    if not isinstance(payload, dict) or not isinstance(payload.get("scenario"), str):
        return web.json_response({"error": "expected {scenario, model?, path?}"}, status=400)
    script = {k: str(v) for k, v in payload.items() if k in ("scenario", "model", "path")}
    request.app[STATE_KEY].scripts.append(script)
    return web.json_response({"ok": True, "scripts": request.app[STATE_KEY].scripts})


def _has_credentials(request: web.Request, *, anthropic: bool) -> bool:
    if request.headers.get("authorization"):
        return True
    return anthropic and bool(request.headers.get("x-api-key"))


def _error_response(error: ErrorResponse) -> web.Response:
    return web.Response(
        status=error.status,
        reason=_REASONS.get(error.status),
        body=error.encoded(),
        headers=error.headers,
        content_type="application/json",
    )


def _plan_for(request: web.Request, body: dict, history: History, entry: dict) -> tuple[Plan, str]:
    state = request.app[STATE_KEY]
    model = str(body.get("model", ""))
    command_text = state.scripted(model=model, path=request.path) or history.last_user_text
    name, args, _ = parse_command(command_text)
    _, _, prompt = parse_command(history.last_user_text)
    scenario = ":".join((name, *args))
    key = (history.conversation, scenario, history.tool_results_seen)
    state.attempts[key] = attempt = state.attempts.get(key, 0) + 1
    entry.update(scenario=scenario, conversation=history.conversation, attempt=attempt)
    req = ScenarioRequest(name, args, prompt, attempt, history.tool_result, model)
    return SCENARIOS[name](req), model


async def _anthropic(request: web.Request) -> web.StreamResponse:
    return await _serve(request, anthropic=True)


async def _openai(request: web.Request) -> web.StreamResponse:
    return await _serve(request, anthropic=False)


async def _serve(request: web.Request, *, anthropic: bool) -> web.StreamResponse:
    state = request.app[STATE_KEY]
    entry: dict[str, Any] = {
        "id": len(state.requests) + 1,
        "path": request.path,
        "received_at": time.time(),  # epoch seconds: tests compare it with other processes' clocks
        "disconnected": False,
        "completed": False,
    }
    state.requests.append(entry)
    error_for = anthropic_error if anthropic else openai_error
    if not _has_credentials(request, anthropic=anthropic):
        entry.update(status=401, scenario="auth-missing")
        return _error_response(error_for(Fail(Failure.AUTH)))
    try:
        body = await request.json()
    except ValueError:
        entry.update(status=400)
        return web.json_response({"error": "request body is not JSON"}, status=400)
    history = anthropic_history(body) if anthropic else openai_history(body)
    incident = request.app[INCIDENT_KEY].failing()
    if incident is not None:
        # Before the scenario is consulted: an incident fails the provider, not a conversation,
        # so it must not use up the conversation's scripted attempts.
        error = error_for(incident.fail())
        entry.update(
            status=error.status,
            completed=True,
            incident=incident.number,
            model=str(body.get("model", "")),
            conversation=history.conversation,
            stream=bool(body.get("stream")),
        )
        return _error_response(error)
    plan, model = _plan_for(request, body, history, entry)
    entry.update(
        model=model,
        stream=bool(body.get("stream")),
        tool_results=history.tool_results_seen,
        # The history's shape, so tests can see what a retry or resume sent back.
        roles=[m.get("role") for m in body.get("messages") or [] if isinstance(m, dict)],
    )
    if plan.http_error is not None:
        fail = plan.http_error.fail
        if fail.failure is Failure.ECHO_CREDENTIALS:
            credential = request.headers.get("x-api-key") or request.headers.get(
                "authorization", ""
            )
            fail = replace(fail, echoed=credential)
        error = error_for(fail)
        entry.update(status=error.status, completed=True)
        return _error_response(error)
    message_id = f"msg_mock_{entry['id']:06d}" if anthropic else f"chatcmpl-mock{entry['id']:06d}"
    if not body.get("stream"):
        return await _serve_whole(
            request,
            plan,
            entry,
            anthropic=anthropic,
            model=model,
            history=history,
            message_id=message_id,
        )
    if anthropic:
        emitted = anthropic_wire.render_stream(
            plan, model=model, input_tokens=history.word_count, message_id=message_id
        )
    else:
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        emitted = openai_wire.render_stream(
            plan,
            model=model,
            input_tokens=history.word_count,
            message_id=message_id,
            include_usage=include_usage,
        )
    return await _stream(request, emitted, entry)


async def _serve_whole(
    request: web.Request,
    plan: Plan,
    entry: dict,
    *,
    anthropic: bool,
    model: str,
    history: History,
    message_id: str,
) -> web.StreamResponse:
    for step in plan.steps:
        match step:
            case Delay(ms=ms):
                try:
                    await _sleep(request, ms, entry)
                except ClientGone:
                    entry["disconnected"] = True
                    return web.Response(status=499)
            case StreamError(fail=fail):
                error = (anthropic_error if anthropic else openai_error)(fail)
                entry.update(status=error.status, completed=True)
                return _error_response(error)
            case Drop():
                entry.update(status=200, dropped=True)
                request.transport.abort()
                return web.Response(status=200)
            case Malformed():
                entry.update(status=200, completed=True)
                return web.Response(
                    status=200, body=b'{"id": "broken', content_type="application/json"
                )
    if not any(isinstance(step, Finish) for step in plan.steps):
        entry.update(status=200, completed=True)
        return web.Response(status=200, body=b'{"id": "cut short', content_type="application/json")
    render = anthropic_wire.render_message if anthropic else openai_wire.render_completion
    entry.update(status=200, completed=True)
    return web.json_response(
        render(plan, model=model, input_tokens=history.word_count, message_id=message_id)
    )


async def _stream(
    request: web.Request, emitted: Iterator[bytes | Delay | Drop], entry: dict
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
                    await _write(request, response, pending, entry)
                continue
            await _write(request, response, pending, entry)
            if isinstance(item, Drop):
                entry["dropped"] = True
                request.transport.abort()
                return response
            await _sleep(request, item.ms, entry)
        await _write(request, response, pending, entry)
        await response.write_eof()
        entry["completed"] = True
    except (ClientGone, ConnectionResetError, ConnectionError):
        entry["disconnected"] = True
    return response


async def _write(
    request: web.Request, response: web.StreamResponse, pending: bytearray, entry: dict
) -> None:
    if not pending:
        return
    if _client_gone(request):
        raise ClientGone
    await response.write(bytes(pending))
    pending.clear()


def _client_gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


async def _sleep(request: web.Request, ms: int, entry: dict) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ms / 1000
    while (remaining := deadline - loop.time()) > 0:
        if _client_gone(request):
            raise ClientGone
        await asyncio.sleep(min(_POLL_S, remaining))
    if _client_gone(request):
        raise ClientGone
