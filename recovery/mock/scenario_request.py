"""What every scenario reads and shares: the request it is given, the ordinary answer, and the
small argument and failure helpers (scenarios.py, tool_scenarios.py, failure_scenarios.py use
them), so each family of scenarios can live in a module of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from recovery.mock.steps import (
    Fail,
    Failure,
    Finish,
    Plan,
    Start,
    Text,
)
from recovery.mock.tool_asks import DeclaredTools


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


def chunks(text: str, words_per_chunk: int = 3) -> tuple[str, ...]:
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


def plain_answer(req: ScenarioRequest) -> Plan:
    if req.tool_result is not None:
        text = f"The tool returned: {req.tool_result}. That completes the request."
    else:
        text = answer_text(req.prompt)
    return Plan((Start(), Text(chunks(text)), Finish("end_turn")))


def count_arg(req: ScenarioRequest, default: int = 1) -> int:
    try:
        return int(req.args[0]) if req.args else default
    except ValueError:
        return default


def int_arg(req: ScenarioRequest, index: int, default: int) -> int:
    try:
        return int(req.args[index]) if len(req.args) > index else default
    except ValueError:
        return default


def failing(req: ScenarioRequest, failed: Plan) -> Plan:
    """The failed plan for the first N attempts, then the ordinary answer (the script's end)."""
    return replace(failed, final=False) if req.attempt <= count_arg(req) else plain_answer(req)


def partial_text(req: ScenarioRequest) -> Text:
    return Text(chunks(answer_text(req.prompt))[:2], complete=False)


OVERLOAD = Fail(Failure.OVERLOADED)


def answer_saying(text: str) -> Plan:
    return Plan((Start(), Text(chunks(text)), Finish("end_turn")))


def split_every(text: str, size: int) -> tuple[str, ...]:
    return tuple(text[i : i + size] for i in range(0, len(text), size))
