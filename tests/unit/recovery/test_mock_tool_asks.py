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
    declared_tools,
    edit_calls,
    marker_arg_decode,
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
    (patch,) = edit_calls(codex, path="a.txt", text="one\ntwo")
    assert patch.freeform
    assert patch.arguments == "*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** End Patch\n"


def test_claude_reads_the_file_before_writing_it_as_its_write_tool_insists():
    claude = DeclaredTools(names=("Read", "Write"), workdir="/ws")

    read, write = edit_calls(claude, path="a.txt", text="hi")

    assert (read.name, json.loads(read.arguments)) == ("Read", {"file_path": "/ws/a.txt"})
    assert write.name == "Write"


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
