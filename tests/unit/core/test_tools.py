"""The built-in tools."""

from __future__ import annotations

from recovery.clock import FakeClock
from sessions_app.agent.tools import REGISTRY, ToolContext, tool_run, tool_specs
from sessions_app.models import Session


def context(session: Session | None = None, tool_call_id: str = "call-1") -> ToolContext:
    return ToolContext(
        session=session, tool_call_id=tool_call_id, clock=FakeClock(start=1_800_000_000)
    )


def test_read_clock_reads_the_injected_clock():
    output = tool_run(name="read_clock", arguments={}, context=context())
    assert output.content == "The current time is 2027-01-15T08:00:00+00:00."
    assert not REGISTRY["read_clock"].side_effecting


def test_an_unknown_tool_is_an_error_result_not_an_exception():
    output = tool_run(name="rm_rf", arguments={}, context=context())
    assert output.is_error and "rm_rf" in output.content


def test_every_tool_is_offered_to_the_model_with_a_schema():
    assert {spec.name for spec in tool_specs()} == {"read_clock", "append_note"}
    assert all(spec.input_schema["type"] == "object" for spec in tool_specs())
