"""Scenarios: one small function per scenario name (chosen as selection.py describes).

`[[mock:overloaded:2]] tell me a joke` fails the first two attempts of that conversation and then
answers. Attempts are counted by the server per conversation and scenario, so retries of the
same call share a counter; a scenario only sees the attempt number it was given, and marks the
plan that ends its script `final`, after which the conversation's counter starts over.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from recovery.mock.recorded_bodies import recorded_body_plan
from recovery.mock.steps import (
    Delay,
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
from recovery.mock.tool_asks import (
    EDIT_TOOLS,
    RUN_TOOLS,
    DeclaredTools,
    MarkerArgError,
    ToolCall,
    edit_calls,
    marker_arg_decode,
    result_excerpt,
    run_call,
    tool_outcome,
)


@dataclass(frozen=True, slots=True)
class ScenarioRequest:
    name: str
    args: tuple[str, ...]
    prompt: str
    attempt: int  # 1-based count of requests seen for this conversation and scenario
    tool_result: str | None  # the latest tool result in history, when the call continues a tool
    model: str
    credential: str = ""  # the request's credential as received (for the careless-gateway cases)
    tools: DeclaredTools = field(default_factory=DeclaredTools)  # what the request declares
    tool_results_since_prompt: int = 0  # how many of a multi-call script's calls have run


def _chunks(text: str, words_per_chunk: int = 3) -> tuple[str, ...]:
    words = text.split(" ")
    return tuple(
        " ".join(words[i : i + words_per_chunk]) + (" " if i + words_per_chunk < len(words) else "")
        for i in range(0, len(words), words_per_chunk)
    )


def answer_text(prompt: str) -> str:
    subject = prompt or "nothing in particular"
    return (
        f"You asked about {subject}. This is the mock provider answering calmly and "
        "deterministically. It streams in several small pieces so a viewer sees it arrive."
    )


def _answer(req: ScenarioRequest) -> Plan:
    if req.tool_result is not None:
        text = f"The tool returned: {req.tool_result}. That completes the request."
    else:
        text = answer_text(req.prompt)
    return Plan((Start(), Text(_chunks(text)), Finish("end_turn")))


def _count(req: ScenarioRequest, default: int = 1) -> int:
    try:
        return int(req.args[0]) if req.args else default
    except ValueError:
        return default


def _int_arg(req: ScenarioRequest, index: int, default: int) -> int:
    try:
        return int(req.args[index]) if len(req.args) > index else default
    except ValueError:
        return default


def _failing(req: ScenarioRequest, failed: Plan) -> Plan:
    """The failed plan for the first N attempts, then the ordinary answer (the script's end)."""
    return replace(failed, final=False) if req.attempt <= _count(req) else _answer(req)


def _partial_text(req: ScenarioRequest) -> Text:
    return Text(_chunks(answer_text(req.prompt))[:2], complete=False)


_OVERLOAD = Fail(Failure.OVERLOADED)


def plain(req: ScenarioRequest) -> Plan:
    return _answer(req)


def thinking(req: ScenarioRequest) -> Plan:
    if req.tool_result is not None:
        return _answer(req)
    thought = _chunks("Let me consider the question carefully before answering it.")
    return Plan(
        (Start(), Thinking(thought), Text(_chunks(answer_text(req.prompt))), Finish("end_turn"))
    )


def tool(req: ScenarioRequest) -> Plan:
    """`/tool NAME {json} text`: call the tool once, then answer once its result is in history."""
    if req.tool_result is not None:
        return _answer(req)
    name, arguments = _tool_call_from_prompt(req.prompt)
    encoded = json.dumps(arguments)
    split = max(1, len(encoded) // 3)
    pieces = (encoded[:split], encoded[split : 2 * split], encoded[2 * split :])
    return Plan(
        (
            Start(),
            Text(("I will use a tool ", "for this.")),
            Tool(f"toolu_mock_{req.attempt:04d}", name, tuple(p for p in pieces if p)),
            Finish("tool_use"),
        )
    )


def tool_then_overloaded(req: ScenarioRequest) -> Plan:
    """`/tool-then-overloaded:N NAME {json} text`: the first model call asks for the tool; the
    call that continues with its result is refused with 529 N times, then answers. The second
    model call of a tool-using turn failing on its own (per-call deadlines)."""
    if req.tool_result is None:
        return tool(req)  # a final plan: the continuing call's attempts count from 1
    return _failing(req, Plan((HttpError(_OVERLOAD),)))


def _said(text: str) -> Plan:
    return Plan((Start(), Text(_chunks(text)), Finish("end_turn")))


def _calling(req: ScenarioRequest, call: ToolCall, intent: str) -> Plan:
    # Each call of a multi-call script needs an id of its own: agents key tool calls by it.
    number = req.tool_results_since_prompt + 1
    call_id = f"toolu_mock_{req.attempt:04d}" + (f"_{number}" if number > 1 else "")
    split = max(1, len(call.arguments) // 3)
    pieces = (
        call.arguments[:split],
        call.arguments[split : 2 * split],
        call.arguments[2 * split :],
    )
    step = Tool(
        call_id,
        call.name,
        tuple(p for p in pieces if p),
        freeform=call.freeform,
    )
    return Plan((Start(), Text(_chunks(intent)), step, Finish("tool_use")))


_OUTCOME_WORDS = {"succeeded": "went through", "refused": "was refused", "failed": "failed"}


def _tool_done(req: ScenarioRequest, what: str) -> Plan:
    """The short answer that ends the turn once the agent sent the tool's result back."""
    result = req.tool_result or ""
    said = _OUTCOME_WORDS[tool_outcome(result)]
    return _said(f"The {what} {said}. The tool said: {result_excerpt(result) or '(nothing)'}")


class _BadArgs(ValueError):
    pass


def _decoded_args(req: ScenarioRequest, spelling: str, wanted: int, optional: int = 0) -> list[str]:
    if not wanted <= len(req.args) <= wanted + optional:
        raise _BadArgs(
            f"The mock could not read the marker: it is spelled {spelling} (blanks as +, a colon "
            f"as %3A), and it came with {len(req.args)} argument(s)."
        )
    try:
        return [marker_arg_decode(arg) for arg in req.args[:wanted]]
    except MarkerArgError as bad:
        raise _BadArgs(f"The mock could not read the marker {spelling}: {bad}.") from None


def _undeclared(req: ScenarioRequest, action: str, known: tuple[str, ...]) -> Plan:
    declared = ", ".join(req.tools.names[:12]) or "none"
    return _said(
        f"The mock was asked to {action}, but this request declares none of the tools it knows "
        f"for that ({', '.join(known)}); tools declared: {declared}."
    )


def _scripted_calls(
    req: ScenarioRequest, calls: tuple[ToolCall, ...], what: str, intent: str, *, overload: bool
) -> Plan:
    """One call per model request until every call has its result, then (with ``overload``)
    the wire's overloaded error for the first N attempts (args[2], 1), then the answer."""
    done = req.tool_results_since_prompt
    if done < len(calls):
        return _calling(req, calls[done], intent if done == len(calls) - 1 else "First a look.")
    if overload and req.attempt <= _int_arg(req, 2, 1):
        return Plan((HttpError(_OVERLOAD),), final=False)
    return _tool_done(req, what)


def _edit(req: ScenarioRequest, spelling: str, *, overload: bool = False) -> Plan:
    try:
        path, text = _decoded_args(req, spelling, 2, 1 if overload else 0)
    except _BadArgs as bad:
        return _said(str(bad))
    # The first call's result decides the second where there are two (Claude Code's Read).
    read = req.tool_result if req.tool_results_since_prompt == 1 else None
    calls = edit_calls(req.tools, path=path, text=text, read=read)
    if not calls:
        return _undeclared(req, f"write {path}", EDIT_TOOLS)
    intent = f"I will write {path} with the agent's own tool."
    return _scripted_calls(req, calls, "edit", intent, overload=overload)


def edit(req: ScenarioRequest) -> Plan:
    """`[[mock:edit:PATH:TEXT]]`: the agent's own file-writing tool writes TEXT to PATH
    (tool_asks.py); once the result is back, a short answer saying how it went."""
    return _edit(req, "[[mock:edit:PATH:TEXT]]")


def edit_then_overloaded(req: ScenarioRequest) -> Plan:
    """`[[mock:edit-then-overloaded:PATH:TEXT[:N]]]`: the edit; then the call that carries its
    result is refused as overloaded (the wire's own 529 / 503) N times (1), then the answer: a
    failure after the agent may have changed the workspace."""
    return _edit(req, "[[mock:edit-then-overloaded:PATH:TEXT:N]]", overload=True)


def run(req: ScenarioRequest) -> Plan:
    """`[[mock:run:CMD]]`: the agent's own shell tool runs CMD (tool_asks.py); once the result
    is back, a short answer saying how it went."""
    try:
        (command,) = _decoded_args(req, "[[mock:run:CMD]]", 1)
    except _BadArgs as bad:
        return _said(str(bad))
    call = run_call(req.tools, command=command)
    if call is None:
        return _undeclared(req, f"run {command!r}", RUN_TOOLS)
    intent = f"I will run {command} with the agent's own tool."
    return _scripted_calls(req, (call,), "command", intent, overload=False)


def wire_fixture(req: ScenarioRequest) -> Plan:
    """`/wire-fixture:NAME`: the recorded body NAME (recorded_bodies.py), on every attempt."""
    return recorded_body_plan(req.args[0] if req.args else "")


def _tool_call_from_prompt(prompt: str) -> tuple[str, dict]:
    name, _, rest = prompt.partition(" ")
    rest = rest.lstrip()
    arguments: dict = {}
    if rest.startswith("{"):
        try:
            decoded, _ = json.JSONDecoder().raw_decode(rest)
            arguments = decoded if isinstance(decoded, dict) else {}
        except ValueError:
            arguments = {}
    return name or "read_clock", arguments


def slow_first_byte(req: ScenarioRequest) -> Plan:
    """`/slow-first-byte:MS[:N]`: headers at once, first event after MS, on the first N attempts."""
    answer = _answer(req)
    slow_attempts = _int_arg(req, 1, 0)  # 0: every attempt is slow
    if slow_attempts and req.attempt > slow_attempts:
        return answer
    return Plan((Delay(_count(req, 1000)), *answer.steps), final=not slow_attempts)


def slow_stream(req: ScenarioRequest) -> Plan:
    return Plan(_answer(req).steps, delta_delay_ms=_count(req, 200))


def ping_stall(req: ScenarioRequest) -> Plan:
    """Pings keep the connection busy for MS without any content: idle is fine, progress is not."""
    stall_ms = _count(req, 1000)
    pings = tuple(step for _ in range(max(1, stall_ms // 50)) for step in (Ping(), Delay(50)))
    return Plan((Start(), *pings, *_answer(req).steps[1:]))


def stall_after_text(req: ScenarioRequest) -> Plan:
    """Some text, then only pings for MS: the connection is alive but the answer is not moving."""
    stall_ms = _count(req, 1000)
    pings = tuple(step for _ in range(max(1, stall_ms // 50)) for step in (Ping(), Delay(50)))
    return Plan((Start(), Text(("Thinking it ", "over... ")), *pings, *_answer(req).steps[1:]))


def long(req: ScenarioRequest) -> Plan:
    """`/long:N[:PER_DELTA[:MS]]`: "w0 w1 ... w(N-1) ", PER_DELTA words per delta (1 by default;
    a multi-megabyte answer in few deltas streams in seconds), MS between deltas (0)."""
    n = _count(req, 5000)
    per_delta = max(1, _int_arg(req, 1, 1))
    words = [f"w{i} " for i in range(n)]
    deltas = tuple("".join(words[i : i + per_delta]) for i in range(0, n, per_delta))
    return Plan((Start(), Text(deltas), Finish("end_turn")), delta_delay_ms=_int_arg(req, 2, 0))


def bulk(req: ScenarioRequest) -> Plan:
    """N characters of answer (default 5,000) in chunks of SIZE (default 1,000), unpaced: a long
    answer as fast as the provider can send it."""
    n, size = max(1, _count(req, 5000)), max(1, _int_arg(req, 1, 1000))
    text = ("lorem ipsum dolor sit amet " * (n // 27 + 1))[:n]
    return Plan(
        (Start(), Text(tuple(text[i : i + size] for i in range(0, n, size))), Finish("end_turn"))
    )


def overloaded(req: ScenarioRequest) -> Plan:
    """`/overloaded:N[:SECONDS]`: 529 for the first N attempts, with Retry-After SECONDS if
    given."""
    if len(req.args) > 1:
        hinted = Fail(Failure.OVERLOADED, retry_after_s=_int_arg(req, 1, 0))
        return _failing(req, Plan((HttpError(hinted),)))
    return _failing(req, Plan((HttpError(_OVERLOAD),)))


def overloaded_sse(req: ScenarioRequest) -> Plan:
    return _failing(req, Plan((StreamError(_OVERLOAD),)))


def overloaded_after_start(req: ScenarioRequest) -> Plan:
    return _failing(req, Plan((Start(), Ping(), StreamError(_OVERLOAD))))


def overloaded_after_text(req: ScenarioRequest) -> Plan:
    return _failing(req, Plan((Start(), _partial_text(req), StreamError(_OVERLOAD))))


def rate_limited(req: ScenarioRequest) -> Plan:
    fail = Fail(Failure.RATE_LIMITED, retry_after_s=_int_arg(req, 1, 1))
    return _failing(req, Plan((HttpError(fail),)))


def rate_limited_after_text(req: ScenarioRequest) -> Plan:
    fail = Fail(Failure.RATE_LIMITED, retry_after_s=_int_arg(req, 1, 1))
    return _failing(req, Plan((Start(), _partial_text(req), StreamError(fail))))


def server_error(req: ScenarioRequest) -> Plan:
    return _failing(
        req, Plan((HttpError(Fail(Failure.SERVER_ERROR, status=_int_arg(req, 1, 500))),))
    )


def server_error_after_text(req: ScenarioRequest) -> Plan:
    fail = Fail(Failure.SERVER_ERROR, status=_int_arg(req, 1, 500))
    return _failing(req, Plan((Start(), _partial_text(req), StreamError(fail))))


def drop(req: ScenarioRequest) -> Plan:
    return _failing(req, Plan((Start(), _partial_text(req), Drop())))


def drop_before_output(req: ScenarioRequest) -> Plan:
    return _failing(req, Plan((Start(), Drop())))


def cut(req: ScenarioRequest) -> Plan:
    return _failing(req, Plan((Start(), _partial_text(req))))


def cut_before_output(req: ScenarioRequest) -> Plan:
    return _failing(req, Plan((Start(),)))


def malformed(req: ScenarioRequest) -> Plan:
    return _failing(req, Plan((Start(), Malformed())))


def huge_error(req: ScenarioRequest) -> Plan:
    return _failing(req, Plan((HttpError(Fail(Failure.HUGE)),)))


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
    pieces = _pieces(key, 4)
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
            Tool("toolu_echo_0001", "append_note", _pieces(arguments, 5)),
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
            Tool("toolu_unstorable_0001", "append_note", _pieces(arguments, 7)),
            Finish("tool_use"),
        )
    )


def _pieces(text: str, size: int) -> tuple[str, ...]:
    return tuple(text[i : i + size] for i in range(0, len(text), size))


def gateway_openrouter(req: ScenarioRequest) -> Plan:
    return _failing(req, Plan((HttpError(Fail(Failure.OPENROUTER, status=_int_arg(req, 1, 502))),)))


def gateway_litellm(req: ScenarioRequest) -> Plan:
    return _failing(req, Plan((HttpError(Fail(Failure.LITELLM, status=_int_arg(req, 1, 429))),)))


def _tool_failing(req: ScenarioRequest, *, complete: bool) -> Plan:
    if req.tool_result is not None:
        return _answer(req)
    args = ('{"text": "rem', 'ember the milk"}')
    call = Tool(
        f"toolu_mock_{req.attempt:04d}", "append_note", args if complete else args[:1], complete
    )
    if req.attempt > _count(req):
        return Plan(
            (Start(), call if complete else Tool(call.id, call.name, args), Finish("tool_use"))
        )
    return Plan((Start(), call, StreamError(_OVERLOAD)), final=False)


def tool_partial_fail(req: ScenarioRequest) -> Plan:
    return _tool_failing(req, complete=False)


def tool_complete_fail(req: ScenarioRequest) -> Plan:
    return _tool_failing(req, complete=True)


SCENARIOS: dict[str, Callable[[ScenarioRequest], Plan]] = {
    "plain": plain,
    "thinking": thinking,
    "tool": tool,
    "tool-then-overloaded": tool_then_overloaded,
    "edit": edit,
    "edit-then-overloaded": edit_then_overloaded,
    "run": run,
    "wire-fixture": wire_fixture,
    "slow-first-byte": slow_first_byte,
    "slow-stream": slow_stream,
    "ping-stall": ping_stall,
    "stall-after-text": stall_after_text,
    "long": long,
    "bulk": bulk,
    "overloaded": overloaded,
    "overloaded-sse": overloaded_sse,
    "overloaded-after-start": overloaded_after_start,
    "overloaded-after-text": overloaded_after_text,
    "rate-limited": rate_limited,
    "rate-limited-after-text": rate_limited_after_text,
    "server-error": server_error,
    "server-error-after-text": server_error_after_text,
    "drop": drop,
    "drop-before-output": drop_before_output,
    "cut": cut,
    "cut-before-output": cut_before_output,
    "malformed": malformed,
    "huge-error": huge_error,
    "quota": quota,
    "auth": auth,
    "echo-credentials": echo_credentials,
    "echo-credentials-stream": echo_credentials_stream,
    "unstorable": unstorable,
    "gateway-openrouter": gateway_openrouter,
    "gateway-litellm": gateway_litellm,
    "tool-partial-fail": tool_partial_fail,
    "tool-complete-fail": tool_complete_fail,
}
