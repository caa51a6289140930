"""What Claude Code, Codex and Gemini CLI really sent when they asked to write a file or run a
command (tests/fixtures/acp_permissions, recorded by tests/agents/test_permission_asks.py), fed
through the same steps as the run's: the paths it names, then asking.ask_from. The card a
person sees must carry the path, the command, the diff where the agent gave one, and the
agent's own allow-once and reject options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp.schema import PermissionOption, ToolCallUpdate

from recovery.providers.acp.asking import PermissionAsk, ask_from
from recovery.providers.acp.permissions import request_paths

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "acp_permissions"
AGENTS = ("claude", "codex", "gemini")
WRITTEN = "<workdir>/agent-wrote.txt"
TEXT = "written by the agent: yes"
# How each agent names the command it wants to run: Codex as an argv list for its shell.
COMMANDS = {
    "claude": "touch made-by-agent",
    "codex": "touch made-by-agent",  # the script of its ["/bin/sh", "-lc", ...]
    "gemini": "touch made-by-agent",
}


def card(agent: str, action: str) -> PermissionAsk:
    request = json.loads((FIXTURES / f"{agent}-{action}.json").read_text())["request"]
    tool_call = ToolCallUpdate.model_validate(request["toolCall"])
    options = [PermissionOption.model_validate(option) for option in request["options"]]
    paths = request_paths(
        locations=[location.path for location in tool_call.locations or ()],
        raw_input=tool_call.raw_input,
    )
    return ask_from(tool_call=tool_call, options=options, kind=tool_call.kind, paths=paths)


def test_every_agent_and_action_has_a_fixture():
    names = sorted(path.name for path in FIXTURES.glob("*.json"))
    actions = ("edit", "edit-existing", "run")
    assert names == sorted(f"{a}-{x}.json" for a in AGENTS for x in actions)


@pytest.mark.parametrize("agent", AGENTS)
def test_an_edit_card_names_the_file_and_shows_the_diff(agent):
    ask = card(agent, "edit")

    assert ask.kind == "edit"
    assert WRITTEN in ask.paths
    assert ask.command is None
    assert ask.diff is not None and ask.diff.path == WRITTEN
    assert ask.diff.new_text.rstrip("\n") == TEXT
    assert ask.diff.old_text in (None, "")  # a new file (Gemini CLI sends "" for "none")


@pytest.mark.parametrize("agent", AGENTS)
def test_an_overwrite_card_shows_the_old_text_beside_the_new(agent):
    # Claude Code and Codex say what an edit replaces only for their Edit and "*** Update File"
    # (the mock uses them on a file that is there); their Write and "*** Add File" over an
    # existing file carry the new text alone (docs/agents-permissions.md).
    ask = card(agent, "edit-existing")

    assert ask.diff is not None and ask.diff.path == WRITTEN
    assert ask.diff.new_text.rstrip("\n") == TEXT
    assert ask.diff.old_text == "the old line\n"


@pytest.mark.parametrize("agent", AGENTS)
def test_a_run_card_shows_the_command_and_no_diff(agent):
    ask = card(agent, "run")

    assert ask.kind == "execute"
    assert ask.command == COMMANDS[agent]
    assert ask.diff is None
    assert "touch made-by-agent" in ask.title


@pytest.mark.parametrize("action", ["edit", "edit-existing", "run"])
@pytest.mark.parametrize("agent", AGENTS)
def test_the_card_offers_the_agents_own_allow_once_and_reject(agent, action):
    kinds = [option.kind for option in card(agent, action).options]

    assert kinds.count("allow_once") == 1 and kinds.count("reject_once") == 1
    assert set(kinds) <= {"allow_once", "allow_always", "reject_once", "reject_always"}


def test_only_claude_and_codex_send_the_tools_raw_input():
    # Gemini CLI sends no rawInput: its card's command comes from the title alone.
    assert card("gemini", "run").raw_input == ""
    assert json.loads(card("claude", "run").raw_input)["command"] == "touch made-by-agent"
    assert json.loads(card("codex", "edit").raw_input)["changes"][WRITTEN]["type"] == "add"


@pytest.mark.parametrize("agent", ("claude", "codex"))
def test_an_overwrite_that_carries_only_the_new_text_shows_what_the_file_holds_now(agent):
    # Their Write / "*** Add File" over a file that is there: the card reads the file itself.
    request = json.loads((FIXTURES / f"{agent}-edit.json").read_text())["request"]
    tool_call = ToolCallUpdate.model_validate(request["toolCall"])

    ask = ask_from(
        tool_call=tool_call,
        options=[],
        kind="edit",
        paths=(WRITTEN,),
        read_current=lambda path: "what was there\n" if path == WRITTEN else None,
    )

    assert ask.diff is not None and ask.diff.old_text == "what was there\n"


def test_a_new_file_stays_a_new_file_when_nothing_is_there():
    ask = card("gemini", "edit")  # Gemini CLI's "" for "no old text"
    request = json.loads((FIXTURES / "gemini-edit.json").read_text())["request"]
    again = ask_from(
        tool_call=ToolCallUpdate.model_validate(request["toolCall"]),
        options=[],
        kind="edit",
        paths=ask.paths,
        read_current=lambda path: None,
    )

    assert again.diff is not None and again.diff.old_text is None


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["/bin/sh", "-lc", "rm -rf build && make"], "rm -rf build && make"),
        (["bash", "-c", "ls"], "ls"),
        (["git", "commit", "-m", "two words"], "git commit -m 'two words'"),
        (["/usr/bin/env", "-c", "x"], "/usr/bin/env -c x"),
    ],
)
def test_a_command_given_as_argv_is_shown_as_a_person_would_type_it(argv, shown):
    tool_call = ToolCallUpdate(tool_call_id="t", title="run", raw_input={"command": argv})

    assert ask_from(tool_call=tool_call, options=[], kind="execute", paths=()).command == shown
