"""Building the model's history from transcript rows (no database: rows are built in memory)."""

from __future__ import annotations

from recovery.model_call import ConversationTurn, TextPart, ToolResultPart, ToolUsePart
from sessions_app.agent.transcript import SEALED_RESULT, turns_from_messages
from sessions_app.models import Message


def row(role: str, text: str = "", *, incomplete: bool = False, **metadata) -> Message:
    return Message(role=role, text=text, incomplete=incomplete, metadata=metadata)


def test_it_alternates_user_and_assistant_text():
    turns = turns_from_messages([row("user", "hi"), row("assistant", "hello"), row("user", "bye")])
    assert turns == (
        ConversationTurn("user", (TextPart("hi"),)),
        ConversationTurn("assistant", (TextPart("hello"),)),
        ConversationTurn("user", (TextPart("bye"),)),
    )


def test_incomplete_partial_output_and_thinking_are_not_fed_back():
    turns = turns_from_messages(
        [
            row("user", "first"),
            row("thinking", "pondering"),
            row("assistant", "half an ans", incomplete=True),
            row("user", "second"),
        ]
    )
    # Dropping the partial answer merges the two prompts into one user turn, never two in a row.
    assert turns == (ConversationTurn("user", (TextPart("first"), TextPart("second"))),)


def test_tool_calls_and_results_become_tool_use_and_tool_result_parts():
    turns = turns_from_messages(
        [
            row("user", "note this"),
            row("assistant", "Saving it."),
            row("tool_call", tool_call_id="t1", name="append_note", arguments={"text": "x"}),
            row("tool_result", "Saved note #1.", tool_call_id="t1", is_error=False),
        ]
    )
    assert turns == (
        ConversationTurn("user", (TextPart("note this"),)),
        ConversationTurn(
            "assistant", (TextPart("Saving it."), ToolUsePart("t1", "append_note", {"text": "x"}))
        ),
        ConversationTurn("user", (ToolResultPart("t1", "Saved note #1.", is_error=False),)),
    )


def test_a_tool_call_that_never_ran_is_sealed_not_rerun():
    turns = turns_from_messages(
        [
            row("user", "note this"),
            row("tool_call", tool_call_id="t9", name="append_note", arguments={"text": "x"}),
            row("user", "are you there?"),
        ]
    )
    assert turns[-1] == ConversationTurn(
        "user",
        (ToolResultPart("t9", SEALED_RESULT, is_error=True), TextPart("are you there?")),
    )


def test_an_acp_agents_own_tool_rows_are_not_sent_to_a_direct_provider():
    turns = turns_from_messages(
        [
            row("user", "list files"),
            row("tool_call", "Read README", tool_call_id="acp-1", name="read", source="acp"),
            row("assistant", "There is a README."),
            row("user", "thanks"),
        ]
    )
    assert turns == (
        ConversationTurn("user", (TextPart("list files"),)),
        ConversationTurn("assistant", (TextPart("There is a README."),)),
        ConversationTurn("user", (TextPart("thanks"),)),
    )
