"""The side-effecting tool against the real database."""

from __future__ import annotations

import pytest

from recovery.clock import FakeClock
from sessions_app.agent.tools import ToolContext, tool_run
from sessions_app.models import Note
from sessions_app.services import session_create


def context(session, tool_call_id: str = "call-1") -> ToolContext:
    return ToolContext(session=session, tool_call_id=tool_call_id, clock=FakeClock())


@pytest.mark.django_db
def test_append_note_writes_one_note_per_tool_call_even_if_asked_twice(owner, target):
    session = session_create(owner=owner, target=target, title="t")
    first = tool_run(name="append_note", arguments={"text": "milk"}, context=context(session, "c7"))
    second = tool_run(
        name="append_note", arguments={"text": "milk"}, context=context(session, "c7")
    )
    assert not first.is_error and "already" in second.content
    assert list(Note.objects.values_list("tool_call_id", "text")) == [("c7", "milk")]


@pytest.mark.django_db
def test_append_note_refuses_an_empty_note(owner, target):
    session = session_create(owner=owner, target=target, title="t")
    output = tool_run(name="append_note", arguments={"text": " "}, context=context(session))
    assert output.is_error and not Note.objects.exists()
