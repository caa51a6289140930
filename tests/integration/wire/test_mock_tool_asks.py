"""The mock provider asks for an agent's own tool (`[[mock:edit:PATH:TEXT]]`, `[[mock:run:CMD]]`,
`[[mock:edit-then-overloaded:PATH:TEXT]]`) on every wire, through each official SDK over real
HTTP: the call names the tool the request declares, in its argument shape; the request that
carries the tool's result gets a short final answer (or, after the edit-then-overloaded edit, the
wire's overloaded error); no fitting tool, or a marker it cannot read, is said in plain text."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest

from recovery.mock.testing import MockProvider
from recovery.mock.wires import GEMINI, OPENAI_CHAT, OPENAI_RESPONSES

from .mock_clients import (
    GEMINI_MODEL,
    WIRES,
    anthropic_client,
    gemini_client,
    genai_errors,
    genai_types,
    openai_client,
    run,
    status_of,
)

OBJECT = {"type": "object", "properties": {}}
EDIT = "[[mock:edit:notes/a.txt:hello+world%3A+done]] write it"
RUN = "[[mock:run:touch+made-by-agent]] run it"
WRITTEN = {"file_path": "/workspace/notes/a.txt", "content": "hello world: done"}

# ---- Anthropic Messages (Claude Code: Write, Bash; the working directory in its system prompt)

CLAUDE_TOOLS = [
    {"name": name, "description": name, "input_schema": OBJECT} for name in ("Bash", "Write")
]
CLAUDE_SYSTEM = "Environment:\n - Primary working directory: /workspace\n - Platform: linux"


def claude_ask(mock: MockProvider, messages: list, *, stream: bool = False):
    client = anthropic_client(mock)
    fields = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 256,
        "system": CLAUDE_SYSTEM,
        "tools": CLAUDE_TOOLS,
        "messages": messages,
    }
    if stream:
        with client.messages.stream(**fields) as events:
            return events.get_final_message()
    return client.messages.create(**fields)


def claude_continued(history: list, message, result: str) -> list:
    """``history`` with the model's tool call and the agent's ``result`` for it."""
    (call,) = [block for block in message.content if block.type == "tool_use"]
    return [
        *history,
        {"role": "assistant", "content": [block.model_dump() for block in message.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call.id, "content": result}],
        },
    ]


def claude_result(prompt: str, message, result: str) -> list:
    return claude_continued([{"role": "user", "content": prompt}], message, result)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_claude_is_asked_to_write_with_its_write_tool_then_told_what_happened(
    mock_provider: MockProvider, stream: bool
) -> None:
    asked = claude_ask(mock_provider, [{"role": "user", "content": EDIT}], stream=stream)

    (call,) = [block for block in asked.content if block.type == "tool_use"]
    assert (call.name, call.input, asked.stop_reason) == ("Write", WRITTEN, "tool_use")
    done = claude_ask(
        mock_provider,
        claude_result(EDIT, asked, "File created successfully at: /workspace/notes/a.txt"),
        stream=stream,
    )
    assert done.stop_reason == "end_turn"
    assert done.content[0].text.startswith("The edit went through.")
    assert mock_provider.requests()[0]["tools"] == ["Bash", "Write"]


READ_TOOLS = [
    *CLAUDE_TOOLS,
    *({"name": name, "description": name, "input_schema": OBJECT} for name in ("Read", "Edit")),
]
SHOWN_BY_READ = (
    "     1\u2192the old line\n     2\u2192\n\n<system-reminder>\nA note.\n</system-reminder>"
)


def claude_read_then_changed(mock: MockProvider, read_result: str) -> tuple[list, object]:
    """The calls the mock makes after Claude Code's Read gave ``read_result``, and its answer."""
    client = anthropic_client(mock)
    fields = {"model": "claude-sonnet-4-6", "max_tokens": 256, "system": CLAUDE_SYSTEM}
    history: list = [{"role": "user", "content": EDIT}]
    called, ids = [], set()
    for result in (read_result, "The file has been written"):
        asked = client.messages.create(**fields, tools=READ_TOOLS, messages=history)
        called += [(b.name, b.input) for b in asked.content if b.type == "tool_use"]
        ids |= {b.id for b in asked.content if b.type == "tool_use"}
        history = claude_continued(history, asked, result)
    assert len(ids) == len(called), "each call has an id of its own"
    return called, client.messages.create(**fields, tools=READ_TOOLS, messages=history)


def test_claude_reads_a_missing_file_then_writes_it(mock_provider) -> None:
    # Claude Code's Write refuses a file it has not read in the session.
    called, done = claude_read_then_changed(mock_provider, "File does not exist.")

    assert called == [("Read", {"file_path": WRITTEN["file_path"]}), ("Write", WRITTEN)]
    assert done.content[0].text.startswith("The edit went through.")
    assert [r["tool_results"] for r in mock_provider.requests()] == [0, 1, 2]


def test_claude_replaces_a_file_read_back_with_an_edit_of_all_its_text(mock_provider) -> None:
    # An Edit, so Claude Code's permission request shows the old text beside the new.
    called, done = claude_read_then_changed(mock_provider, SHOWN_BY_READ)

    edited = {
        "file_path": WRITTEN["file_path"],
        "old_string": "the old line\n",
        "new_string": WRITTEN["content"],
    }
    assert called == [("Read", {"file_path": WRITTEN["file_path"]}), ("Edit", edited)]
    assert done.content[0].text.startswith("The edit went through.")


def test_claude_is_asked_to_run_with_bash_and_a_refusal_is_said(mock_provider) -> None:
    asked = claude_ask(mock_provider, [{"role": "user", "content": RUN}])

    (call,) = [block for block in asked.content if block.type == "tool_use"]
    assert call.name == "Bash" and call.input["command"] == "touch made-by-agent"
    done = claude_ask(
        mock_provider, claude_result(RUN, asked, "User refused permission to run tool")
    )
    assert done.content[0].text.startswith("The command was refused.")


def test_claude_after_the_edit_the_next_call_is_overloaded_once(mock_provider) -> None:
    prompt = "[[mock:edit-then-overloaded:a.txt:x]] go"
    asked = claude_ask(mock_provider, [{"role": "user", "content": prompt}])
    follow_up = claude_result(prompt, asked, "File created successfully at: /workspace/a.txt")

    with pytest.raises(anthropic.APIStatusError) as failed:
        claude_ask(mock_provider, follow_up)
    again = claude_ask(mock_provider, follow_up)

    assert failed.value.status_code == 529
    assert failed.value.body["error"]["type"] == "overloaded_error"
    assert again.content[0].text.startswith("The edit went through.")


# ---- OpenAI Responses (Codex: apply_patch as a freeform tool, exec_command) -------------------

CODEX_TOOLS = [
    {"type": "function", "name": "exec_command", "description": "run", "parameters": OBJECT},
    {
        "type": "custom",
        "name": "apply_patch",
        "description": "edit files",
        "format": {"type": "grammar", "syntax": "lark", "definition": 'start: "*** Begin Patch"'},
    },
]
CODEX_CONTEXT = {
    "role": "user",
    "content": [{"type": "input_text", "text": "<environment_context>\n  <cwd>/workspace</cwd>"}],
}
PATCH = "*** Begin Patch\n*** Add File: notes/a.txt\n+hello world: done\n*** End Patch\n"


def codex_events(mock: MockProvider, items: list) -> list:
    with openai_client(mock).responses.stream(
        model="gpt-5.4", input=[CODEX_CONTEXT, *items], tools=CODEX_TOOLS
    ) as events:
        return list(events)


def finished_items(events: list) -> list:
    return [e.item for e in events if e.type == "response.output_item.done"]


CAT_MISSING = "Process exited with code 1\nOutput:\ncat: notes/a.txt: No such file or directory\n"


def codex_looked(mock: MockProvider, prompt: str, cat_output: str) -> tuple[list, list]:
    """Codex's exec_command `cat` the mock asks for first, answered with ``cat_output``: the
    conversation so far and what the mock asked for next."""
    (look,) = [
        item
        for item in finished_items(codex_events(mock, [{"role": "user", "content": prompt}]))
        if item.type == "function_call"
    ]
    assert look.name == "exec_command" and json.loads(look.arguments)["cmd"].startswith("cat ")
    history = [
        {"role": "user", "content": prompt},
        {"type": "function_call", "call_id": look.call_id, "name": look.name,
         "arguments": look.arguments},
        {"type": "function_call_output", "call_id": look.call_id, "output": cat_output},
    ]  # fmt: skip
    return history, codex_events(mock, history)


def test_codex_is_asked_to_edit_with_an_apply_patch_it_then_hears_the_result(
    mock_provider: MockProvider,
) -> None:
    looked, events = codex_looked(mock_provider, EDIT, CAT_MISSING)

    (call,) = [item for item in finished_items(events) if item.type == "custom_tool_call"]
    pieces = [e.delta for e in events if e.type == "response.custom_tool_call_input.delta"]
    assert (call.name, call.input) == ("apply_patch", PATCH)
    assert len(pieces) >= 2 and "".join(pieces) == PATCH
    history = [
        *looked,
        {"type": "custom_tool_call", "call_id": call.call_id, "name": call.name,
         "input": call.input},
        {"type": "custom_tool_call_output", "call_id": call.call_id,
         "output": "Exit code: 0\nOutput:\nSuccess. Updated the following files:\nA notes/a.txt"},
    ]  # fmt: skip
    done = codex_events(mock_provider, history)
    (answer,) = [item for item in finished_items(done) if item.type == "message"]
    assert answer.content[0].text.startswith("The edit went through.")
    assert [r["tool_results"] for r in mock_provider.requests()] == [0, 1, 2]


def test_codex_updates_a_file_its_cat_showed_so_its_request_shows_the_old_lines(
    mock_provider: MockProvider,
) -> None:
    _, events = codex_looked(mock_provider, EDIT, "Process exited with code 0\nOutput:\nold\n")

    (call,) = [item for item in finished_items(events) if item.type == "custom_tool_call"]
    assert call.input == (
        "*** Begin Patch\n*** Update File: notes/a.txt\n@@\n-old\n+hello world: done\n"
        "*** End Patch\n"
    )


def test_codex_is_asked_to_run_with_exec_command(mock_provider: MockProvider) -> None:
    events = codex_events(mock_provider, [{"role": "user", "content": RUN}])

    (call,) = [item for item in finished_items(events) if item.type == "function_call"]
    assert call.name == "exec_command"
    assert json.loads(call.arguments) == {"cmd": "touch made-by-agent"}


def test_codex_after_the_edit_the_next_call_is_the_wires_overloaded_error(mock_provider) -> None:
    prompt = "[[mock:edit-then-overloaded:a.txt:x]] go"
    looked, events = codex_looked(mock_provider, prompt, CAT_MISSING)
    (call,) = [item for item in finished_items(events) if item.type == "custom_tool_call"]
    history = [
        *looked,
        {"type": "custom_tool_call", "call_id": call.call_id, "name": call.name,
         "input": call.input},
        {"type": "custom_tool_call_output", "call_id": call.call_id, "output": "Success."},
    ]  # fmt: skip

    with pytest.raises(openai.APIStatusError) as failed:
        codex_events(mock_provider, history)
    overloaded = run(OPENAI_RESPONSES, mock_provider, "[[mock:overloaded:1]] hi")

    assert failed.value.status_code == status_of(overloaded.error) == 503
    assert failed.value.body == overloaded.error.body


# ---- OpenAI Chat Completions (any OpenAI-compatible agent with a shell tool) ------------------


def test_chat_completions_asks_for_a_declared_shell_tool(mock_provider: MockProvider) -> None:
    tools = [{"type": "function", "function": {"name": "Bash", "parameters": OBJECT}}]
    client = openai_client(mock_provider)
    asked = client.chat.completions.create(
        model="mock-1", messages=[{"role": "user", "content": RUN}], tools=tools
    )

    (call,) = asked.choices[0].message.tool_calls
    assert call.function.name == "Bash"
    assert json.loads(call.function.arguments)["command"] == "touch made-by-agent"
    done = client.chat.completions.create(
        model="mock-1",
        tools=tools,
        messages=[
            {"role": "user", "content": RUN},
            asked.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "(Bash completed with no output)"},
        ],
    )
    assert done.choices[0].message.content.startswith("The command went through.")


# ---- Gemini API (Gemini CLI: write_file, run_shell_command; its workspace in the first message)

GEMINI_CONTEXT = (
    "<session_context>\n- **Workspace Directories:**\n  - /workspace\n</session_context>"
)


def gemini_ask(mock: MockProvider, contents: list, *, stream: bool = True):
    declarations = [
        genai_types.FunctionDeclaration(name=name, description=name, parameters_json_schema=OBJECT)
        for name in ("read_file", "write_file", "run_shell_command")
    ]
    config = genai_types.GenerateContentConfig(
        tools=[genai_types.Tool(function_declarations=declarations)]
    )
    models = gemini_client(mock).models
    if stream:
        return list(
            models.generate_content_stream(model=GEMINI_MODEL, contents=contents, config=config)
        )
    return [models.generate_content(model=GEMINI_MODEL, contents=contents, config=config)]


def gemini_user(prompt: str) -> genai_types.Content:
    parts = [genai_types.Part(text=GEMINI_CONTEXT), genai_types.Part(text=prompt)]
    return genai_types.Content(role="user", parts=parts)


def gemini_calls(chunks: list) -> list:
    return [
        p.function_call for c in chunks for p in c.candidates[0].content.parts if p.function_call
    ]


def gemini_answered(prompt: str, call, response: dict) -> list:
    return [
        gemini_user(prompt),
        genai_types.Content(role="model", parts=[genai_types.Part(function_call=call)]),
        genai_types.Content(
            role="user",
            parts=[genai_types.Part.from_function_response(name=call.name, response=response)],
        ),
    ]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_gemini_is_asked_to_write_with_write_file_then_told_what_happened(
    mock_provider: MockProvider, stream: bool
) -> None:
    (call,) = gemini_calls(gemini_ask(mock_provider, [gemini_user(EDIT)], stream=stream))

    assert (call.name, call.args) == ("write_file", WRITTEN)
    refused = {"error": 'Tool "write_file" was canceled by the user.'}
    done = gemini_ask(mock_provider, gemini_answered(EDIT, call, refused), stream=False)
    assert done[0].text.startswith("The edit was refused.")


def test_gemini_is_asked_to_run_with_run_shell_command(mock_provider: MockProvider) -> None:
    (call,) = gemini_calls(gemini_ask(mock_provider, [gemini_user(RUN)]))

    assert call.name == "run_shell_command" and call.args["command"] == "touch made-by-agent"
    done = gemini_ask(mock_provider, gemini_answered(RUN, call, {"output": "Output: (empty)"}))
    assert "".join(c.text or "" for c in done).startswith("The command went through.")


def test_gemini_after_the_edit_the_next_call_is_overloaded(mock_provider) -> None:
    prompt = "[[mock:edit-then-overloaded:a.txt:x]] go"
    (call,) = gemini_calls(gemini_ask(mock_provider, [gemini_user(prompt)]))

    with pytest.raises(genai_errors.APIError) as failed:
        gemini_ask(mock_provider, gemini_answered(prompt, call, {"output": "ok"}), stream=False)

    assert (failed.value.code, failed.value.status) == (503, "UNAVAILABLE")


# ---- every wire: no fitting tool, or a marker it cannot read, is said in plain words ----------


@pytest.mark.parametrize("wire", WIRES)
def test_without_a_fitting_tool_the_answer_says_so(mock_provider: MockProvider, wire) -> None:
    answered = run(wire, mock_provider, EDIT)

    assert answered.finished and answered.error is None
    assert "declares none of the tools it knows for that" in answered.text
    assert "Write, write_file, apply_patch" in answered.text


@pytest.mark.parametrize(
    ("prompt", "said"),
    [
        ("[[mock:edit:only-a-path]] x", "it came with 1 argument(s)"),
        ("[[mock:run:echo:hi]] x", "a colon as %3A"),
        ("[[mock:run:50%]] x", "not followed by two hex digits"),
        ("[[mock:edit:a%FF:b]] x", "does not decode to UTF-8"),
        ("[[mock:edit-then-overloaded:a:b:c:d]] x", "it came with 4 argument(s)"),
    ],
)
@pytest.mark.parametrize("wire", [GEMINI, OPENAI_CHAT])
def test_a_marker_it_cannot_read_is_said_never_a_crash(mock_provider, wire, prompt, said) -> None:
    answered = run(wire, mock_provider, prompt)

    assert answered.finished and answered.error is None
    assert "The mock could not read the marker" in answered.text and said in answered.text
