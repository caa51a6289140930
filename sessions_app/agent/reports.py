"""What a driver tells its Turn: reports while it runs, one outcome when it ends.

A driver is a generator (``Driver.reports``). Each value it yields is a provider's event, as the
provider stream gives it (``recovery.stream_events`` for a direct model call,
``recovery.providers.acp.agent_events`` for an agent process), or one of the few reports below
about the driver's own loop; the value it returns is the turn's one ``Outcome``. The driver
writes nothing, marks nothing shown and asks the ladder nothing: the Turn does all of that, on
each report as it arrives, before it resumes the driver.

Admission is the generator's suspension itself. Before each model call after the first (the
Turn admits the first before it starts the driver), the driver yields ``CallStarting`` and makes
the call only when the Turn resumes it. A Turn whose target's health refuses the call closes the
generator instead, so the call is never made; the driver cannot forget to ask, and needs no
answer to read. This was chosen over sending the admission back with ``send()``: there would be
a refusal value for the driver to check, and a path where it could make the call anyway.
"""

from __future__ import annotations

import enum
from collections.abc import Generator
from dataclasses import dataclass
from typing import Protocol

from recovery.judge import CallStats
from recovery.providers.acp.agent_events import AgentEvent
from recovery.replay import ReplayFacts
from recovery.stream_events import StreamEvent, ToolCall
from recovery.taxonomy import Evidence


@dataclass(frozen=True, slots=True)
class CallStarting:
    """The driver is about to make another model call of the turn (one after its tools ran)."""


@dataclass(frozen=True, slots=True)
class CallSucceeded:
    """A provider call reached its terminal event (an agent: its whole prompt completed)."""

    stats: CallStats | None = None


@dataclass(frozen=True, slots=True)
class ToolRan:
    """One of the turn's tools ran, once for its call id. ``call`` and ``content`` are redacted."""

    call: ToolCall
    content: str
    is_error: bool


Report = StreamEvent | AgentEvent | CallStarting | CallSucceeded | ToolRan


class TurnResult(enum.StrEnum):
    SUCCEEDED = "succeeded"
    STOPPED = "stopped"


@dataclass(frozen=True, slots=True)
class HandedBack:
    """The turn ends without a provider failure to judge: the target can't be called at all
    (no key, no command) or the agent loop hit its limit. Never retried."""

    code: str
    detail: str


@dataclass(frozen=True, slots=True)
class Judged:
    """A failed provider call (direct) or prompt (ACP, with its ``replay`` facts) for the ladder
    to judge."""

    evidence: Evidence
    detail: str
    model: str
    stats: CallStats | None = None
    replay: ReplayFacts | None = None


Outcome = TurnResult | HandedBack | Judged
Reports = Generator[Report, None, Outcome]


class Driver(Protocol):
    def reports(self) -> Reports:
        """Drive the agent once, yielding what it does; return how the turn ended."""
        ...
