"""The mock provider choosing an agent's own tool (recovery/mock/tool_asks.py): the marker
arguments' escape, the tools a request declares on each wire, where the agent works, and how a
tool's result reads. The result strings are the ones the real agents sent back
(tests/agents/test_permission_asks.py)."""

from __future__ import annotations

import json

import pytest

from recovery.mock.tool_asks import (
    DeclaredTools,
    MarkerArgError,
    cat_back,
    declared_tools,
    edit_calls,
    marker_arg_decode,
    read_back,
    run_call,
    tool_outcome,
)


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ("touch+made-by-agent", "touch made-by-agent"),
        ("echo+a%3Ab", "echo a:b"),
        ("1%2B1", "1+1"),
        ("line+one%0Aline+two", "line one\nline two"),
        ("%5B%5Bx%5D%5D", "[[x]]"),
        ("caf%C3%A9", "café"),
        ("plain", "plain"),
    ],
)
def test_a_marker_argument_is_form_encoded_text(raw, text):
    assert marker_arg_decode(raw) == text


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ("50%", "not followed by two hex digits"),
        ("%ZZ", "not followed by two hex digits"),
        ("%FF", "does not decode to UTF-8"),
        ("a%00b", "NUL"),
    ],
)
def test_a_malformed_argument_says_what_is_wrong(raw, said):
    with pytest.raises(MarkerArgError, match=said):
        marker_arg_decode(raw)


def test_the_declared_tools_are_read_in_every_wires_shape():
    anthropic = {"tools": [{"name": "Write", "input_schema": {}}, {"name": "Bash"}]}
    chat = {"tools": [{"type": "function", "function": {"name": "Bash", "parameters": {}}}]}
    responses = {
        "tools": [
            {"type": "function", "name": "exec_command", "parameters": {}},
            {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}},
            {"type": "web_search"},
        ]
    }
    gemini = {"tools": [{"functionDeclarations": [{"name": "write_file"}, {"name": "glob"}]}]}

    assert declared_tools(anthropic).names == ("Write", "Bash")
    assert declared_tools(chat).names == ("Bash",)
    assert declared_tools(responses).names == ("exec_command", "apply_patch")
    assert declared_tools(responses).freeform == {"apply_patch"}
    assert declared_tools(gemini).names == ("write_file", "glob")
    assert declared_tools({"tools": "nonsense"}) == DeclaredTools()


@pytest.mark.parametrize(
    "body",
    [
        {"system": [{"type": "text", "text": "Env:\n - Primary working directory: /ws\n"}]},
        {"input": [{"role": "user", "content": [{"text": "<cwd>/ws</cwd>"}]}]},
        {"contents": [{"parts": [{"text": "- **Workspace Directories:**\n  - /ws\n- more"}]}]},
    ],
    ids=["claude", "codex", "gemini"],
)
def test_the_working_directory_is_found_where_each_agent_names_it(body):
    assert declared_tools(body).workdir == "/ws"


def test_a_tools_own_description_is_not_taken_for_the_working_directory():
    body = {"tools": [{"name": "Bash", "description": "Primary working directory: /elsewhere"}]}
    assert declared_tools(body).workdir is None


def test_an_edit_uses_each_agents_own_file_tool_and_shape():
    claude = DeclaredTools(names=("Bash", "Edit", "Write"), workdir="/ws")
    gemini = DeclaredTools(names=("replace", "write_file"), workdir="/ws")
    codex = DeclaredTools(
        names=("exec_command", "apply_patch"), freeform=frozenset({"apply_patch"})
    )

    (written,) = edit_calls(claude, path="a.txt", text="hi")
    assert written.name == "Write"
    assert json.loads(written.arguments) == {"file_path": "/ws/a.txt", "content": "hi"}
    (written,) = edit_calls(gemini, path="/abs/a.txt", text="hi")
    assert json.loads(written.arguments)["file_path"] == "/abs/a.txt"
    look, patch = edit_calls(codex, path="a.txt", text="one\ntwo")
    assert (look.name, json.loads(look.arguments)) == ("exec_command", {"cmd": "cat a.txt"})
    assert patch.freeform
    assert patch.arguments == "*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** End Patch\n"
    (patch,) = edit_calls(DeclaredTools(names=("apply_patch",)), path="a b.txt", text="hi")
    assert json.loads(patch.arguments)["input"].startswith(
        "*** Begin Patch\n*** Add File: a b.txt\n"
    )


CODEX = DeclaredTools(names=("exec_command", "apply_patch"), freeform=frozenset({"apply_patch"}))
CAT_SHOWN = "Chunk ID: 1\nWall time: 0.0 seconds\nProcess exited with code 0\nOutput:\none\n\ntwo\n"


def test_a_file_codex_cat_showed_is_replaced_by_an_update_of_all_its_lines():
    (look, _) = edit_calls(CODEX, path="my notes.txt", text="x")
    (_, patch) = edit_calls(CODEX, path="a.txt", text="new\nlines", read=CAT_SHOWN)

    assert json.loads(look.arguments) == {"cmd": "cat 'my notes.txt'"}
    assert patch.arguments == (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n-\n-two\n+new\n+lines\n*** End Patch\n"
    )


@pytest.mark.parametrize(
    "shown",
    [
        "Process exited with code 1\nOutput:\ncat: a.txt: No such file or directory\n",
        "Exit code: 0\nOutput:\n",  # an empty file
        "Process exited with code 0\nOutput:\none\n…2000 tokens truncated…\n",
        "Output:\none\n",  # no exit code: not a cat we can trust
    ],
    ids=["missing", "empty", "truncated", "no-exit-code"],
)
def test_a_cat_that_shows_no_whole_text_gives_an_add_file(shown):
    assert cat_back(shown) is None
    (_, patch) = edit_calls(CODEX, path="a.txt", text="hi", read=shown)
    assert "*** Add File: a.txt" in patch.arguments


def test_claude_reads_the_file_before_writing_it_as_its_write_tool_insists():
    claude = DeclaredTools(names=("Read", "Write", "Edit"), workdir="/ws")

    read, write = edit_calls(claude, path="a.txt", text="hi")

    assert (read.name, json.loads(read.arguments)) == ("Read", {"file_path": "/ws/a.txt"})
    assert write.name == "Write"
    (_, write) = edit_calls(claude, path="a.txt", text="hi", read="File does not exist.")
    assert write.name == "Write"


READ_SHOWN = (
    "     1\u2192one\n     2\u2192\ttwo\n     3\u2192\n\n<system-reminder>x</system-reminder>"
)


def test_a_file_claude_read_back_is_replaced_by_an_edit_of_all_its_text():
    claude = DeclaredTools(names=("Read", "Write", "Edit"), workdir="/ws")

    (_, edit) = edit_calls(claude, path="a.txt", text="hi", read=READ_SHOWN)

    assert edit.name == "Edit"
    assert json.loads(edit.arguments) == {
        "file_path": "/ws/a.txt",
        "old_string": "one\n\ttwo\n",
        "new_string": "hi",
    }


@pytest.mark.parametrize(
    "shown",
    [
        "File does not exist. Current working directory: /ws",
        "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>",
        "     2\u2192a line that is not the first",
        "\n".join(f"{n:6}\u2192x" for n in range(1, 2001)),  # Read may have stopped there
        "     1\u2192" + "x" * 2000,  # Read cuts a line this long
    ],
    ids=["missing", "empty", "not-from-one", "too-many-lines", "too-long-a-line"],
)
def test_a_read_that_shows_no_whole_text_falls_back_to_write(shown):
    assert read_back(shown) is None
    claude = DeclaredTools(names=("Read", "Write", "Edit"))
    assert edit_calls(claude, path="/a", text="hi", read=shown)[1].name == "Write"


def test_an_edit_is_not_used_where_it_would_change_nothing_or_is_not_declared():
    same = edit_calls(
        DeclaredTools(names=("Read", "Write", "Edit")),
        path="/a",
        text="one",
        read="     1\u2192one",
    )
    no_edit = edit_calls(
        DeclaredTools(names=("Read", "Write")), path="/a", text="hi", read=READ_SHOWN
    )
    assert same[1].name == no_edit[1].name == "Write"


def test_a_run_uses_each_agents_own_shell_tool_and_shape():
    def arguments(*names: str) -> tuple[str, dict]:
        call = run_call(DeclaredTools(names=names), command="touch x")
        assert call is not None
        return call.name, json.loads(call.arguments)

    assert arguments("Read", "Bash")[1]["command"] == "touch x"
    assert arguments("run_shell_command")[1]["command"] == "touch x"
    assert arguments("exec_command", "write_stdin") == ("exec_command", {"cmd": "touch x"})
    assert arguments("shell") == ("shell", {"command": ["bash", "-lc", "touch x"]})


def test_no_fitting_tool_gives_none():
    tools = DeclaredTools(names=("Read", "Glob"))
    assert edit_calls(tools, path="a", text="b") == ()
    assert run_call(tools, command="ls") is None


@pytest.mark.parametrize(
    ("result", "outcome"),
    [
        ("File created successfully at: /workspace/agent-wrote.txt", "succeeded"),
        ("(Bash completed with no output)", "succeeded"),
        ("Exit code: 0 Wall time: 0.2 seconds Output: Success. Updated the files:", "succeeded"),
        ("Process exited with code 0 Original token count: 0 Output:", "succeeded"),
        ("<untrusted_context> Output: (empty) Process Group PGID: 20", "succeeded"),
        ("User refused permission to run tool", "refused"),
        ("<tool_use_error>File has not been read yet. Read it first</tool_use_error>", "failed"),
        ('{"error": "Tool \\"write_file\\" was canceled by the user."}', "refused"),
        ("Exit code: 1 Wall time: 0.4 seconds Output: Failed to create parent", "failed"),
        ("Process exited with code 2", "failed"),
    ],
)  # fmt: skip
def test_a_tool_result_reads_as_success_refusal_or_failure(result, outcome):
    assert tool_outcome(result) == outcome


def test_a_command_that_ran_and_was_denied_by_the_system_is_a_failure_not_a_refusal():
    assert tool_outcome("touch: cannot touch '/etc/x': Permission denied\nexit code 1") == "failed"
