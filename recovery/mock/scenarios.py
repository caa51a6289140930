"""Scenarios: one small function per scenario name (chosen as selection.py describes).

`[[mock:overloaded:2]] tell me a joke` fails the first two attempts of that conversation and then
answers. Attempts are counted by the server per conversation and scenario, so retries of the
same call share a counter; a scenario only sees the attempt number it was given, and marks the
plan that ends its script `final`, after which the conversation's counter starts over.

The table below names every scenario; the tool-asking and the failing families live in
tool_scenarios.py and failure_scenarios.py, what they share in scenario_request.py.
"""

from __future__ import annotations

from collections.abc import Callable

from recovery.mock import failure_scenarios as failures
from recovery.mock import tool_scenarios as tools
from recovery.mock.recorded_bodies import recorded_body_plan
from recovery.mock.scenario_request import (
    ScenarioRequest,
    answer_text,
    chunks,
    count_arg,
    int_arg,
    plain_answer,
)
from recovery.mock.steps import (
    Delay,
    Finish,
    Ping,
    Plan,
    Start,
    Text,
    Thinking,
)


def plain(req: ScenarioRequest) -> Plan:
    return plain_answer(req)


def thinking(req: ScenarioRequest) -> Plan:
    if req.tool_result is not None:
        return plain_answer(req)
    thought = chunks("Let me consider the question carefully before answering it.")
    return Plan(
        (Start(), Thinking(thought), Text(chunks(answer_text(req.prompt))), Finish("end_turn"))
    )


def wire_fixture(req: ScenarioRequest) -> Plan:
    """`/wire-fixture:NAME`: the recorded body NAME (recorded_bodies.py), on every attempt."""
    return recorded_body_plan(req.args[0] if req.args else "")


def slow_first_byte(req: ScenarioRequest) -> Plan:
    """`/slow-first-byte:MS[:N]`: headers at once, first event after MS, on the first N attempts."""
    answer = plain_answer(req)
    slow_attempts = int_arg(req, 1, 0)  # 0: every attempt is slow
    if slow_attempts and req.attempt > slow_attempts:
        return answer
    return Plan((Delay(count_arg(req, 1000)), *answer.steps), final=not slow_attempts)


def slow_stream(req: ScenarioRequest) -> Plan:
    return Plan(plain_answer(req).steps, delta_delay_ms=count_arg(req, 200))


def ping_stall(req: ScenarioRequest) -> Plan:
    """Pings keep the connection busy for MS without any content: idle is fine, progress is not."""
    stall_ms = count_arg(req, 1000)
    pings = tuple(step for _ in range(max(1, stall_ms // 50)) for step in (Ping(), Delay(50)))
    return Plan((Start(), *pings, *plain_answer(req).steps[1:]))


def stall_after_text(req: ScenarioRequest) -> Plan:
    """Some text, then only pings for MS: the connection is alive but the answer is not moving."""
    stall_ms = count_arg(req, 1000)
    pings = tuple(step for _ in range(max(1, stall_ms // 50)) for step in (Ping(), Delay(50)))
    return Plan((Start(), Text(("Thinking it ", "over... ")), *pings, *plain_answer(req).steps[1:]))


def long(req: ScenarioRequest) -> Plan:
    """`/long:N[:PER_DELTA[:MS]]`: "w0 w1 ... w(N-1) ", PER_DELTA words per delta (1 by default;
    a multi-megabyte answer in few deltas streams in seconds), MS between deltas (0)."""
    n = count_arg(req, 5000)
    per_delta = max(1, int_arg(req, 1, 1))
    words = [f"w{i} " for i in range(n)]
    deltas = tuple("".join(words[i : i + per_delta]) for i in range(0, n, per_delta))
    return Plan((Start(), Text(deltas), Finish("end_turn")), delta_delay_ms=int_arg(req, 2, 0))


def bulk(req: ScenarioRequest) -> Plan:
    """N characters of answer (default 5,000) in chunks of SIZE (default 1,000), unpaced: a long
    answer as fast as the provider can send it."""
    n, size = max(1, count_arg(req, 5000)), max(1, int_arg(req, 1, 1000))
    text = ("lorem ipsum dolor sit amet " * (n // 27 + 1))[:n]
    return Plan(
        (Start(), Text(tuple(text[i : i + size] for i in range(0, n, size))), Finish("end_turn"))
    )


SCENARIOS: dict[str, Callable[[ScenarioRequest], Plan]] = {
    "plain": plain,
    "thinking": thinking,
    "tool": tools.tool,
    "tool-then-overloaded": tools.tool_then_overloaded,
    "edit": tools.edit,
    "edit-then-overloaded": tools.edit_then_overloaded,
    "run": tools.run,
    "wire-fixture": wire_fixture,
    "slow-first-byte": slow_first_byte,
    "slow-stream": slow_stream,
    "ping-stall": ping_stall,
    "stall-after-text": stall_after_text,
    "long": long,
    "bulk": bulk,
    "overloaded": failures.overloaded,
    "overloaded-sse": failures.overloaded_sse,
    "overloaded-after-start": failures.overloaded_after_start,
    "overloaded-after-text": failures.overloaded_after_text,
    "rate-limited": failures.rate_limited,
    "rate-limited-after-text": failures.rate_limited_after_text,
    "server-error": failures.server_error,
    "server-error-after-text": failures.server_error_after_text,
    "drop": failures.drop,
    "drop-before-output": failures.drop_before_output,
    "cut": failures.cut,
    "cut-before-output": failures.cut_before_output,
    "malformed": failures.malformed,
    "huge-error": failures.huge_error,
    "quota": failures.quota,
    "auth": failures.auth,
    "echo-credentials": failures.echo_credentials,
    "echo-credentials-stream": failures.echo_credentials_stream,
    "unstorable": failures.unstorable,
    "gateway-openrouter": failures.gateway_openrouter,
    "gateway-litellm": failures.gateway_litellm,
    "tool-partial-fail": tools.tool_partial_fail,
    "tool-complete-fail": tools.tool_complete_fail,
}
