"""The mock's control endpoints, for tests, benchmarks and people trying scenarios by hand.

GET    /_mock/health
GET    /_mock/requests[?wire=W&conversation=C]   the request log (never any credential)
GET    /_mock/conversations                      requests and running attempts per conversation
POST   /_mock/reset                              forget requests, scripts, counters, incidents
POST   /_mock/script  {"scenario": "overloaded:2", "conversation"?, "wire"?, "model"?, "path"?}
                      force a scenario on every matching request (newest script wins); one
                      with the same fields replaces the older one. It stays until cleared.
GET    /_mock/script                             the scripts in force
DELETE /_mock/script[?conversation=C]            clear them (or one conversation's)
POST   /_mock/redirect {"location": url, "status"?: 301|302|303|307|308 (307)}
                      answer every model request with that redirect until cleared or reset
DELETE /_mock/redirect                           stop redirecting
"""

from __future__ import annotations

from aiohttp import web

from recovery.mock.incident import INCIDENT_KEY
from recovery.mock.scenarios import SCENARIOS
from recovery.mock.selection import UnknownScenario, selection_from_script
from recovery.mock.state import SCRIPT_FIELDS, STATE_KEY, Script
from recovery.mock.wires import WIRES


def add_routes(app: web.Application) -> None:
    app.router.add_get("/_mock/health", _health)
    app.router.add_get("/_mock/requests", _requests)
    app.router.add_get("/_mock/conversations", _conversations)
    app.router.add_post("/_mock/reset", _reset)
    app.router.add_post("/_mock/script", _script_set)
    app.router.add_get("/_mock/script", _scripts)
    app.router.add_delete("/_mock/script", _scripts_clear)
    app.router.add_post("/_mock/redirect", _redirect_set)
    app.router.add_delete("/_mock/redirect", _redirect_clear)


def _bad(message: str) -> web.Response:
    return web.json_response({"error": message}, status=400)


async def _health(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


async def _requests(request: web.Request) -> web.Response:
    seen = request.app[STATE_KEY].requests
    for name in ("wire", "conversation"):
        if name in request.query:
            seen = [entry for entry in seen if entry.get(name) == request.query[name]]
    return web.json_response({"count": len(seen), "requests": seen})


async def _conversations(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    described: dict[str, dict] = {}
    for entry in state.requests:
        if "conversation" not in entry:
            continue
        conversation = described.setdefault(
            entry["conversation"],
            {"source": entry.get("conversation_source"), "requests": 0, "wires": []},
        )
        conversation["requests"] += 1
        if entry.get("wire") not in conversation["wires"]:
            conversation["wires"].append(entry.get("wire"))
    for name, attempts in state.attempts.describe().items():
        described.setdefault(name, {"requests": 0, "wires": []})["attempts"] = attempts
    return web.json_response({"conversations": described})


async def _reset(request: web.Request) -> web.Response:
    request.app[STATE_KEY].reset()
    request.app[INCIDENT_KEY].reset()
    return web.json_response({"ok": True})


def _script_from(payload: object) -> Script | str:
    """The script a payload asks for, or what is wrong with it."""
    expected = "expected {scenario, conversation?, wire?, model?, path?} with string values"
    if not isinstance(payload, dict) or not isinstance(payload.get("scenario"), str):
        return expected
    unknown = set(payload) - {"scenario", *SCRIPT_FIELDS}
    if unknown:
        return f"unknown fields {sorted(unknown)}; {expected}"
    if not all(isinstance(value, str) for value in payload.values()):
        return expected
    if "wire" in payload and payload["wire"] not in WIRES:
        return f"unknown wire {payload['wire']!r}; known: {', '.join(WIRES)}"
    try:
        selection_from_script(payload["scenario"], text="")
    except UnknownScenario as error:
        return str(error)
    return Script(**payload)


async def _script_set(request: web.Request) -> web.Response:
    try:
        payload = await request.json()
    except ValueError:
        return _bad("the body is not JSON; expected {scenario, conversation?, wire?, ...}")
    script = _script_from(payload)
    if isinstance(script, str):
        return _bad(script)
    state = request.app[STATE_KEY]
    state.script_set(script)
    return web.json_response({"ok": True, "scripts": [s.describe() for s in state.scripts]})


async def _scripts(request: web.Request) -> web.Response:
    scripts = request.app[STATE_KEY].scripts
    return web.json_response(
        {"scripts": [s.describe() for s in scripts], "known": sorted(SCENARIOS)}
    )


async def _scripts_clear(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    state.scripts_clear(conversation=request.query.get("conversation"))
    return web.json_response({"ok": True, "scripts": [s.describe() for s in state.scripts]})


_REDIRECT_STATUSES = (301, 302, 303, 307, 308)


async def _redirect_set(request: web.Request) -> web.Response:
    try:
        payload = await request.json()
    except ValueError:
        payload = None
    location = payload.get("location") if isinstance(payload, dict) else None
    status = payload.get("status", 307) if isinstance(payload, dict) else None
    if not isinstance(location, str) or status not in _REDIRECT_STATUSES:
        return _bad("expected {location, status?} with status one of 301 302 303 307 308")
    request.app[STATE_KEY].redirect = {"location": location, "status": status}
    return web.json_response({"ok": True, "redirect": request.app[STATE_KEY].redirect})


async def _redirect_clear(request: web.Request) -> web.Response:
    request.app[STATE_KEY].redirect = None
    return web.json_response({"ok": True})
