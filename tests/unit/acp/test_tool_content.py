"""An ACP tool call's content and files become neutral values: each content type, the update's
replacement rules, the bounds, and redaction of every text a tool carries."""

from __future__ import annotations

from random import Random

from devtools.secret_fakes import SECRET_FAKES
from recovery.providers.acp.agent_events import (
    AgentToolCall,
    AgentToolCallUpdate,
    ToolDiff,
    ToolLocation,
    ToolTerminal,
    ToolText,
)
from recovery.providers.acp.convert import update_events
from recovery.providers.acp.redaction import OutputRedactor
from recovery.providers.acp.tool_content import DIFF_SIDE_LIMIT_BYTES, TEXT_LIMIT_BYTES

ANTHROPIC_KEY = SECRET_FAKES["anthropic"](Random(22))[1]


def text_item(text: str) -> dict:
    return {"type": "content", "content": {"type": "text", "text": text}}


def diff_item(path: str, old: str | None, new: str) -> dict:
    return {"type": "diff", "path": path, "oldText": old, "newText": new}


def tool_call(**fields) -> AgentToolCall:
    (event,) = update_events({"sessionUpdate": "tool_call", "toolCallId": "t1", **fields})
    assert isinstance(event, AgentToolCall)
    return event


def tool_update(**fields) -> AgentToolCallUpdate:
    (event,) = update_events({"sessionUpdate": "tool_call_update", "toolCallId": "t1", **fields})
    assert isinstance(event, AgentToolCallUpdate)
    return event


def test_it_reads_each_content_type_and_the_files_of_a_tool_call():
    event = tool_call(
        title="Edit greet.py",
        kind="edit",
        status="in_progress",
        locations=[{"path": "/w/greet.py", "line": 3}, {"path": "/w/b.py"}, {"nopath": 1}],
        content=[
            diff_item("/w/greet.py", "a\n", "b\n"),
            text_item("the agent says why"),
            {"type": "terminal", "terminalId": "term-7"},
            {"type": "content", "content": {"type": "image", "data": "AAAA"}},
            {"type": "unknown"},
        ],
    )

    assert event.blocks == (
        ToolDiff(path="/w/greet.py", old_text="a\n", new_text="b\n"),
        ToolText(text="the agent says why"),
        ToolTerminal(terminal_id="term-7"),
    )
    assert event.locations == (ToolLocation("/w/greet.py", 3), ToolLocation("/w/b.py", None))


def test_a_new_file_diff_has_no_old_text():
    event = tool_call(content=[diff_item("/w/new.py", None, "x = 1\n")])

    assert event.blocks == (ToolDiff(path="/w/new.py", old_text=None, new_text="x = 1\n"),)


def test_an_update_names_only_the_fields_it_replaces():
    status_only = tool_update(status="completed")
    assert (status_only.blocks, status_only.locations, status_only.title) == (None, None, None)

    replaced = tool_update(content=[text_item("one"), text_item("two")], locations=[], title="T")
    assert replaced.blocks == (ToolText("one"), ToolText("two"))
    assert replaced.content == "one\ntwo"
    assert replaced.locations == ()
    assert replaced.title == "T"

    cleared = tool_update(content=[])
    assert cleared.blocks == ()


def test_a_long_text_is_kept_up_to_its_bound_and_says_how_much_was_not():
    event = tool_call(content=[text_item("é" * TEXT_LIMIT_BYTES)])

    (block,) = event.blocks
    assert isinstance(block, ToolText)
    assert len(block.text.encode()) <= TEXT_LIMIT_BYTES
    assert len(block.text.encode()) + block.omitted_bytes == 2 * TEXT_LIMIT_BYTES


def test_a_file_too_large_to_diff_is_dropped_whole_not_cut():
    huge = "line\n" * (DIFF_SIDE_LIMIT_BYTES // 4)

    (block,) = tool_call(content=[diff_item("/w/big.txt", huge, huge + "x\n")]).blocks

    assert isinstance(block, ToolDiff)
    assert (block.old_text, block.new_text) == ("", "")
    assert block.omitted_bytes > 2 * DIFF_SIDE_LIMIT_BYTES - 10


def test_a_secret_in_terminal_output_and_in_a_diff_is_redacted_when_converted():
    output = f"$ env\nANTHROPIC_API_KEY={ANTHROPIC_KEY}\n\x1b[32mok\x1b[0m\n"
    event = tool_update(
        content=[text_item(output), diff_item("/w/.env", "", f"KEY={ANTHROPIC_KEY}\n")],
        title=f"cat .env # {ANTHROPIC_KEY}",
    )

    carried = repr(event)
    assert ANTHROPIC_KEY not in carried
    assert ANTHROPIC_KEY[:20] not in carried
    assert "$ env" in event.content and "\x1b[32mok" in event.content


def test_the_sessions_own_key_is_redacted_from_tool_content_by_the_output_redactor():
    # A value of the agent's own environment, in no known format: only the redactor knows it.
    own = "Zq8vLm2Np4Rt6Wx9Yb3Kd5Hf7Jg1"
    redactor = OutputRedactor(known_values=[own])
    raw = update_events(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "t1",
            "title": f"echo {own}",
            "content": [text_item(f"printed {own}"), diff_item(f"/w/{own}", "a\n", f"{own}\n")],
            "locations": [{"path": f"/w/{own}/x"}],
        }
    )

    (event,) = redactor.events(raw)

    assert own not in repr(event)
    assert isinstance(event, AgentToolCallUpdate)
    assert event.content.startswith("printed ")
    assert event.blocks is not None and isinstance(event.blocks[1], ToolDiff)
