"""Scenarios that fail: overload, rate limits, server errors, drops and cuts, malformed streams,
the gateways' own error bodies, refusals that no retry cures, and the careless and unstorable
outputs that the redaction and storage paths must survive. Most fail the first N attempts and
then answer (`failing`).
"""

from __future__ import annotations

import json

from recovery.mock.scenario_request import (
    OVERLOAD,
    ScenarioRequest,
    failing,
    int_arg,
    partial_text,
    split_every,
)
from recovery.mock.steps import (
    Drop,
    Fail,
    Failure,
    Finish,
    HttpError,
    Malformed,
    Ping,
    Plan,
    Start,
    StreamError,
    Text,
    Thinking,
    Tool,
)


def overloaded(req: ScenarioRequest) -> Plan:
    """`/overloaded:N[:SECONDS]`: 529 for the first N attempts, with Retry-After SECONDS if
    given."""
    if len(req.args) > 1:
        hinted = Fail(Failure.OVERLOADED, retry_after_s=int_arg(req, 1, 0))
        return failing(req, Plan((HttpError(hinted),)))
    return failing(req, Plan((HttpError(OVERLOAD),)))


def overloaded_sse(req: ScenarioRequest) -> Plan:
    return failing(req, Plan((StreamError(OVERLOAD),)))


def overloaded_after_start(req: ScenarioRequest) -> Plan:
    return failing(req, Plan((Start(), Ping(), StreamError(OVERLOAD))))


def overloaded_after_text(req: ScenarioRequest) -> Plan:
    return failing(req, Plan((Start(), partial_text(req), StreamError(OVERLOAD))))


def rate_limited(req: ScenarioRequest) -> Plan:
    fail = Fail(Failure.RATE_LIMITED, retry_after_s=int_arg(req, 1, 1))
    return failing(req, Plan((HttpError(fail),)))


def rate_limited_after_text(req: ScenarioRequest) -> Plan:
    fail = Fail(Failure.RATE_LIMITED, retry_after_s=int_arg(req, 1, 1))
    return failing(req, Plan((Start(), partial_text(req), StreamError(fail))))


def server_error(req: ScenarioRequest) -> Plan:
    return failing(req, Plan((HttpError(Fail(Failure.SERVER_ERROR, status=int_arg(req, 1, 500))),)))


def server_error_after_text(req: ScenarioRequest) -> Plan:
    fail = Fail(Failure.SERVER_ERROR, status=int_arg(req, 1, 500))
    return failing(req, Plan((Start(), partial_text(req), StreamError(fail))))


def drop(req: ScenarioRequest) -> Plan:
    return failing(req, Plan((Start(), partial_text(req), Drop())))


def drop_before_output(req: ScenarioRequest) -> Plan:
    return failing(req, Plan((Start(), Drop())))


def cut(req: ScenarioRequest) -> Plan:
    return failing(req, Plan((Start(), partial_text(req))))


def cut_before_output(req: ScenarioRequest) -> Plan:
    return failing(req, Plan((Start(),)))


def malformed(req: ScenarioRequest) -> Plan:
    return failing(req, Plan((Start(), Malformed())))


def huge_error(req: ScenarioRequest) -> Plan:
    return failing(req, Plan((HttpError(Fail(Failure.HUGE)),)))


def quota(req: ScenarioRequest) -> Plan:
    return Plan((HttpError(Fail(Failure.QUOTA)),))


def auth(req: ScenarioRequest) -> Plan:
    return Plan((HttpError(Fail(Failure.AUTH)),))


def echo_credentials(req: ScenarioRequest) -> Plan:
    """A careless gateway that quotes the caller's credential in its error (redaction test)."""
    return Plan((HttpError(Fail(Failure.ECHO_CREDENTIALS)),))


def echo_credentials_stream(req: ScenarioRequest) -> Plan:
    """A careless gateway that streams the caller's credential back in 4-character pieces: in its
    thinking, its text and a tool call's arguments; the answer after the tool quotes the tool's
    result (redaction test for every output path)."""
    scheme, _, token = req.credential.partition(" ")
    key = token or scheme  # the key itself, without "Bearer"
    pieces = split_every(key, 4)
    if req.tool_result is not None:
        return Plan(
            (Start(), Text(("Noted: ", req.tool_result, f" key {key}")), Finish("end_turn"))
        )
    arguments = json.dumps({"text": f"remember {key}"})
    return Plan(
        (
            Start(),
            Thinking(("The key is ", *pieces, " as sent.")),
            Text(("Your key is ", *pieces, ", keep it safe.")),
            Tool("toolu_echo_0001", "append_note", split_every(arguments, 5)),
            Finish("tool_use"),
        )
    )


def unstorable(req: ScenarioRequest) -> Plan:
    """`/unstorable`: output holding characters PostgreSQL refuses, on every output path: a NUL
    and a lone surrogate (sent as the JSON escapes "\\u0000" and "\\ud800") in the thinking, the
    text and an append_note call's arguments; the answer after the tool has them too."""
    if req.tool_result is not None:
        return Plan((Start(), Text(("Done\x00 ", "and noted\udc00.")), Finish("end_turn")))
    arguments = json.dumps({"text": "a\x00b\ud800c"})
    return Plan(
        (
            Start(),
            Thinking(("Reading\x00 the ", "file\ud800 now.")),
            Text(("It holds\x00 a ", "NUL and\ud800 a lone surrogate.")),
            Tool("toolu_unstorable_0001", "append_note", split_every(arguments, 7)),
            Finish("tool_use"),
        )
    )


def gateway_openrouter(req: ScenarioRequest) -> Plan:
    return failing(req, Plan((HttpError(Fail(Failure.OPENROUTER, status=int_arg(req, 1, 502))),)))


def gateway_litellm(req: ScenarioRequest) -> Plan:
    return failing(req, Plan((HttpError(Fail(Failure.LITELLM, status=int_arg(req, 1, 429))),)))
