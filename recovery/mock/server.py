"""The mock provider: a real aiohttp server speaking four providers' wires, driven by scenarios.

Wires (each also under a `/conversations/{id}` prefix, see conversations.py):

    POST /v1/messages                                    Anthropic Messages
    POST /v1/chat/completions                            OpenAI Chat Completions
    POST /v1/responses                                   OpenAI Responses (Codex)
    POST /v1beta/models/{model}:streamGenerateContent?alt=sse
    POST /v1beta/models/{model}:generateContent          Gemini API (Gemini CLI); also /v1/models
    POST /v1beta/models/{model}:countTokens              (answers; never runs a scenario)

Choosing a scenario: a marker anywhere in the person's latest text, `[[mock:overloaded:2]] tell me
a joke` (or the old leading `/overloaded:2 tell me a joke`; selection.py), or a script set through
`POST /_mock/script` for a conversation, wire or model (control.py). Every scenario plays on every
wire, each failure in that provider's own shape (errors.py and the *_wire.py renderers).

Counting: attempts are counted per conversation (conversations.py: the URL prefix, the
`X-Mock-Conversation` header, or the wire plus the first user message), scenario and model call;
a retry of the same conversation continues its script, and a script that has fully played starts
over, so "529 twice, then success" works again in every new session.

Malformed requests (no credential, a body that is not JSON, missing fields, an unknown scenario
in a marker, an unknown Gemini method) are refused in the wire's own error shape with a message
that says what is wrong.

Every request is logged with its headers (credentials as fingerprints), so tests can check what a
client really sent; while a redirect is in force (control.py) every model request answers with it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from aiohttp import web

from recovery.mock import control, gemini_wire
from recovery.mock.conversations import (
    CONVERSATION_HEADER,
    CONVERSATION_PREFIX,
    BadConversationId,
    Conversation,
    conversation_identify,
)
from recovery.mock.delivery import error_response, stream_send, whole_send
from recovery.mock.history import History
from recovery.mock.incident import INCIDENT_KEY, IncidentBook
from recovery.mock.incident import add_routes as add_incident_routes
from recovery.mock.scenario_request import ScenarioRequest
from recovery.mock.scenarios import SCENARIOS
from recovery.mock.selection import (
    Selection,
    UnknownScenario,
    selection_from_script,
    selection_from_text,
)
from recovery.mock.state import STATE_KEY, MockState, recorded_headers
from recovery.mock.steps import Fail, Failure, Plan, Reply
from recovery.mock.tool_asks import DeclaredTools, declared_tools
from recovery.mock.wires import ANTHROPIC, GEMINI, OPENAI_CHAT, OPENAI_RESPONSES, WIRES, Wire

ANTHROPIC_PATH = "/v1/messages"
OPENAI_PATH = "/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"
GEMINI_PATHS = ("/v1beta/models/{target}", "/v1/models/{target}")
_GEMINI_METHODS = {
    "streamGenerateContent": (True, "generate"),
    "generateContent": (False, "generate"),
    "countTokens": (False, "count_tokens"),
}


def build_app(*, monotonic: Callable[[], float] = time.monotonic) -> web.Application:
    app = web.Application(client_max_size=32 * 1024 * 1024)
    app[STATE_KEY] = MockState()
    app[INCIDENT_KEY] = IncidentBook(monotonic)
    routes = [
        (ANTHROPIC_PATH, _anthropic),
        (OPENAI_PATH, _openai_chat),
        (RESPONSES_PATH, _openai_responses),
        *((path, _gemini) for path in GEMINI_PATHS),
    ]
    for path, handler in routes:
        app.router.add_post(path, handler)
        app.router.add_post(CONVERSATION_PREFIX + path, handler)
    control.add_routes(app)
    add_incident_routes(app)
    return app


async def _anthropic(request: web.Request) -> web.StreamResponse:
    return await _serve(request, WIRES[ANTHROPIC])


async def _openai_chat(request: web.Request) -> web.StreamResponse:
    return await _serve(request, WIRES[OPENAI_CHAT])


async def _openai_responses(request: web.Request) -> web.StreamResponse:
    return await _serve(request, WIRES[OPENAI_RESPONSES])


async def _gemini(request: web.Request) -> web.StreamResponse:
    wire = WIRES[GEMINI]
    model, _, method = request.match_info["target"].rpartition(":")
    if not model or method not in _GEMINI_METHODS:
        entry = _log(request, wire, operation=method or "unknown")
        known = ", ".join(_GEMINI_METHODS)
        return _refuse(
            entry, wire, Failure.NOT_FOUND, f"no method {method!r}; the mock has {known}"
        )
    stream, operation = _GEMINI_METHODS[method]
    if stream and request.query.get("alt") != "sse":
        entry = _log(request, wire, operation=operation)
        message = "the mock streams Gemini only as server-sent events: add ?alt=sse"
        return _refuse(entry, wire, Failure.BAD_REQUEST, message)
    return await _serve(request, wire, model=model, stream=stream, operation=operation)


def _log(request: web.Request, wire: Wire, *, operation: str = "generate") -> dict[str, Any]:
    return request.app[STATE_KEY].log(
        wire=wire.name,
        path=request.path,
        operation=operation,
        received_at=time.time(),  # epoch seconds: tests compare it with other processes' clocks
        disconnected=False,
        completed=False,
        headers=recorded_headers(request.headers.items()),
    )


def _refuse(entry: dict, wire: Wire, failure: Failure, message: str) -> web.Response:
    error = wire.error(Fail(failure, message=message))
    entry.update(status=error.status, completed=True, error=message)
    return error_response(error)


async def _serve(
    request: web.Request,
    wire: Wire,
    *,
    model: str | None = None,
    stream: bool | None = None,
    operation: str = "generate",
) -> web.StreamResponse:
    entry = _log(request, wire, operation=operation)
    redirect = request.app[STATE_KEY].redirect
    if redirect is not None:
        entry.update(status=redirect["status"], completed=True)
        return web.Response(status=redirect["status"], headers={"Location": redirect["location"]})
    credential = wire.credential(request)
    if not credential:
        error = wire.error(Fail(Failure.AUTH, status=wire.missing_credential_status))
        entry.update(status=error.status, scenario="auth-missing")
        return error_response(error)
    try:
        body = await request.json()
    except ValueError:
        return _refuse(entry, wire, Failure.BAD_REQUEST, "the request body is not JSON")
    if not isinstance(body, dict):
        return _refuse(entry, wire, Failure.BAD_REQUEST, "the request body is not a JSON object")
    if problem := wire.problem(body):
        return _refuse(entry, wire, Failure.BAD_REQUEST, problem)
    history = wire.history(body)
    try:
        conversation = conversation_identify(
            from_path=request.match_info.get("conversation"),
            from_header=request.headers.get(CONVERSATION_HEADER),
            wire=wire.name,
            history=history,
        )
    except BadConversationId as bad:
        return _refuse(entry, wire, Failure.BAD_REQUEST, str(bad))
    model = model if model is not None else str(body["model"])
    stream = stream if stream is not None else bool(body.get("stream"))
    entry.update(
        conversation=conversation.id,
        conversation_source=conversation.source,
        model=model,
        stream=stream,
        tool_results=history.tool_results_seen,
        roles=list(history.roles),
        # The request as sent, so a test reads the exact history a client put in it.
        body=body,
    )
    if operation == "count_tokens":
        entry.update(status=200, completed=True)
        return web.json_response(gemini_wire.render_token_count(total_tokens=history.word_count))
    incident = request.app[INCIDENT_KEY].failing()
    if incident is not None:
        # Before the scenario is consulted: an incident fails the provider, not a conversation,
        # so it must not use up the conversation's scripted attempts.
        error = wire.error(incident.fail())
        entry.update(status=error.status, completed=True, incident=incident.number)
        return error_response(error)
    try:
        selection = _selection(request, wire, model, history, conversation)
    except UnknownScenario as unknown:
        return _refuse(entry, wire, Failure.BAD_REQUEST, str(unknown))
    tools = declared_tools(body)
    entry.update(tools=list(tools.names))
    plan = _plan(
        request.app[STATE_KEY], selection, conversation, history, model, entry, credential, tools
    )
    if plan.http_error is not None:
        fail = plan.http_error.fail
        if fail.failure is Failure.ECHO_CREDENTIALS:
            fail = replace(fail, echoed=credential)
        error = wire.error(fail)
        entry.update(status=error.status, completed=True)
        return error_response(error)
    if (raw := plan.raw_body) is not None:
        entry.update(status=200, completed=True)
        return web.Response(status=200, body=raw.data, headers={"content-type": raw.content_type})
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    reply = Reply(model, history.word_count, wire.message_id(entry["id"]), include_usage)
    if not stream:
        return await whole_send(request, wire, plan, entry, lambda: wire.render_whole(plan, reply))
    return await stream_send(request, wire.render_stream(plan, reply), entry)


def _selection(
    request: web.Request, wire: Wire, model: str, history: History, conversation: Conversation
) -> Selection:
    path = request.path
    if (prefix := request.match_info.get("conversation")) is not None:
        path = path.removeprefix(CONVERSATION_PREFIX.format(conversation=prefix))
    scripted = request.app[STATE_KEY].scripted(
        conversation=conversation.id, wire=wire.name, model=model, path=path
    )
    if scripted is not None:
        return selection_from_script(scripted, text=history.latest_user_text)
    return selection_from_text(history.latest_user_text)


def _plan(
    state: MockState,
    selection: Selection,
    conversation: Conversation,
    history: History,
    model: str,
    entry: dict,
    credential: str = "",
    tools: DeclaredTools | None = None,
) -> Plan:
    key = (conversation.id, selection.scenario, history.tool_results_seen)
    attempt = state.attempts.next_attempt(key)
    scenario_request = ScenarioRequest(
        selection.name,
        selection.args,
        selection.prompt,
        attempt,
        history.tool_result,
        model,
        credential,
        tools or DeclaredTools(),
        history.tool_results_since_prompt,
    )
    plan = SCENARIOS[selection.name](scenario_request)
    if plan.final:
        state.attempts.script_played(key)
    entry.update(scenario=selection.scenario, attempt=attempt, script_played=plan.final)
    return plan
