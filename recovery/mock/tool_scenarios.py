"""Scenarios that ask for tools: a named tool call (`/tool`), the agent's own edit and shell
tools (`[[mock:edit:PATH:TEXT]]`, `[[mock:run:CMD]]`, tool_asks.py), and a tool call whose
stream fails part way. Each returns the call first and the answer once the result is back.
"""

from __future__ import annotations

import json

from recovery.mock.scenario_request import (
    OVERLOAD,
    ScenarioRequest,
    answer_saying,
    chunks,
    count_arg,
    failing,
    int_arg,
    plain_answer,
)
from recovery.mock.steps import (
    Finish,
    HttpError,
    Plan,
    Start,
    StreamError,
    Text,
    Tool,
)
from recovery.mock.tool_asks import (
    EDIT_TOOLS,
    RUN_TOOLS,
    MarkerArgError,
    ToolCall,
    edit_calls,
    marker_arg_decode,
    result_excerpt,
    run_call,
    tool_outcome,
)


def tool(req: ScenarioRequest) -> Plan:
    """`/tool NAME {json} text`: call the tool once, then answer once its result is in history."""
    if req.tool_result is not None:
        return plain_answer(req)
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
    return failing(req, Plan((HttpError(OVERLOAD),)))


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
    return Plan((Start(), Text(chunks(intent)), step, Finish("tool_use")))


_OUTCOME_WORDS = {"succeeded": "went through", "refused": "was refused", "failed": "failed"}


def _tool_done(req: ScenarioRequest, what: str) -> Plan:
    """The short answer that ends the turn once the agent sent the tool's result back."""
    result = req.tool_result or ""
    said = _OUTCOME_WORDS[tool_outcome(result)]
    return answer_saying(
        f"The {what} {said}. The tool said: {result_excerpt(result) or '(nothing)'}"
    )


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
    return answer_saying(
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
    if overload and req.attempt <= int_arg(req, 2, 1):
        return Plan((HttpError(OVERLOAD),), final=False)
    return _tool_done(req, what)


def _edit(req: ScenarioRequest, spelling: str, *, overload: bool = False) -> Plan:
    try:
        path, text = _decoded_args(req, spelling, 2, 1 if overload else 0)
    except _BadArgs as bad:
        return answer_saying(str(bad))
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
        return answer_saying(str(bad))
    call = run_call(req.tools, command=command)
    if call is None:
        return _undeclared(req, f"run {command!r}", RUN_TOOLS)
    intent = f"I will run {command} with the agent's own tool."
    return _scripted_calls(req, (call,), "command", intent, overload=False)


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


def _tool_failing(req: ScenarioRequest, *, complete: bool) -> Plan:
    if req.tool_result is not None:
        return plain_answer(req)
    args = ('{"text": "rem', 'ember the milk"}')
    call = Tool(
        f"toolu_mock_{req.attempt:04d}", "append_note", args if complete else args[:1], complete
    )
    if req.attempt > count_arg(req):
        return Plan(
            (Start(), call if complete else Tool(call.id, call.name, args), Finish("tool_use"))
        )
    return Plan((Start(), call, StreamError(OVERLOAD)), final=False)


def tool_partial_fail(req: ScenarioRequest) -> Plan:
    return _tool_failing(req, complete=False)


def tool_complete_fail(req: ScenarioRequest) -> Plan:
    return _tool_failing(req, complete=True)
