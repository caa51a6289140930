"""The model asking an agent for one of the agent's own tools: a file write or a shell command.

`[[mock:edit:PATH:TEXT]]` and `[[mock:run:CMD]]` (scenarios.py) call whichever of the agent's own
tools fits, read from the tools the request declares, in the argument shape that agent expects:

    write a file    Claude Code Read {file_path}, then Write {file_path, content} (or, when
                    Read showed the file's text, Edit {file_path, old_string, new_string} of
                    all of it); Gemini CLI write_file {file_path, content}; Codex exec_command
                    `cat PATH`, then apply_patch (a freeform tool: an "*** Add File:" patch, or
                    "*** Update File:" of all the old lines where the cat showed them)
    run a command   Claude Code Bash {command}; Gemini CLI run_shell_command {command}; Codex
                    exec_command {cmd} (or an older Codex's shell_command / shell)

A relative PATH is made absolute against the agent's working directory where the request names
it (Claude Code's and Gemini CLI's file tools want absolute paths; Codex's patches stay relative,
as its instructions ask). A request that declares none of these tools gets None back, and the
scenario answers in plain text instead.

Marker arguments cannot hold blanks, colons or `]` (marker.py), so they are form-encoded: `+` is
a space and `%XX` any byte of UTF-8 (`%3A` a colon, `%2B` a plus, `%0A` a newline), as in a URL's
query string. `[[mock:run:touch+made-by-agent]]` runs `touch made-by-agent`.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_plus

_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_DESCRIPTION = "Run the command the mock provider was asked for"
# Where each agent tells its model the working directory (its system prompt or first message).
_WORKDIR_HINTS = (
    re.compile(r"Primary working directory: (/\S+)"),  # Claude Code
    re.compile(r"<cwd>(/[^<\n]+)</cwd>"),  # Codex
    re.compile(r"\*\*Workspace Directories:\*\*\s*\n\s*-\s*(/\S+)"),  # Gemini CLI
)


class MarkerArgError(ValueError):
    """A marker argument that is not form-encoded text (said to the person, never raised on)."""


def marker_arg_decode(raw: str) -> str:
    """A marker argument as the text it stands for: `+` a blank, `%XX` a UTF-8 byte."""
    if _BAD_ESCAPE.search(raw):
        raise MarkerArgError(f"{raw!r} has a % that is not followed by two hex digits")
    try:
        text = unquote_plus(raw, errors="strict")
    except UnicodeDecodeError:
        raise MarkerArgError(f"{raw!r} does not decode to UTF-8 text") from None
    if "\x00" in text:
        raise MarkerArgError(f"{raw!r} holds a NUL character")
    return text


@dataclass(frozen=True, slots=True)
class DeclaredTools:
    """What a request tells the model about the agent: its tools, and where it works."""

    names: tuple[str, ...] = ()
    freeform: frozenset[str] = field(default_factory=frozenset)  # names declared as "custom"
    workdir: str | None = None

    def has(self, name: str) -> bool:
        return name in self.names


def _tool_entries(tools: Any) -> Iterator[tuple[str, bool]]:
    """(name, freeform) for each tool, in whichever wire's shape the list is written."""
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, dict):
            continue
        for key in ("functionDeclarations", "function_declarations"):  # Gemini
            for declared in tool.get(key) or ():
                if isinstance(declared, dict) and isinstance(declared.get("name"), str):
                    yield declared["name"], False
        function = tool.get("function")  # OpenAI Chat
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            yield function["name"], False
        elif isinstance(tool.get("name"), str):  # Anthropic, OpenAI Responses
            yield tool["name"], tool.get("type") == "custom"


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def _workdir(body: dict) -> str | None:
    # The tools' own descriptions are not searched: they quote examples, not the real place.
    texts = (body.get(key) for key in ("system", "instructions", "systemInstruction", "messages"))
    conversation = [*texts, body.get("input"), body.get("contents")]
    for text in _strings(conversation):
        for hint in _WORKDIR_HINTS:
            if found := hint.search(text):
                return found[1]
    return None


def declared_tools(body: dict) -> DeclaredTools:
    entries = list(_tool_entries(body.get("tools")))
    return DeclaredTools(
        names=tuple(name for name, _ in entries),
        freeform=frozenset(name for name, freeform in entries if freeform),
        workdir=_workdir(body),
    )


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: str  # JSON arguments, or a freeform tool's plain input
    freeform: bool = False


def _absolute(tools: DeclaredTools, path: str) -> str:
    if posixpath.isabs(path) or tools.workdir is None:
        return path
    return posixpath.join(tools.workdir, path)


def _patch_adding(path: str, text: str) -> str:
    lines = "".join(f"+{line}\n" for line in text.split("\n"))
    return f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n"


def _patch_replacing(path: str, old: str, text: str) -> str:
    removed = "".join(f"-{line}\n" for line in old.removesuffix("\n").split("\n"))
    added = "".join(f"+{line}\n" for line in text.split("\n"))
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n{removed}{added}*** End Patch\n"


_EXITED = re.compile(r"(?:Process exited with code|Exit code:?) ([0-9]+)")
_OUTPUT = "\nOutput:\n"


def cat_back(result: str) -> str | None:
    """The text of a file as Codex's exec_command showed a `cat` of it, or None where it showed
    none (the file is missing or empty) or may have cut some off."""
    exited = _EXITED.search(result)
    if exited is None or exited[1] != "0" or _OUTPUT not in result:
        return None
    shown = result.split(_OUTPUT, 1)[1]
    if not shown or "truncated" in shown:
        return None
    return shown


def _codex_patch(tools: DeclaredTools, path: str, text: str, read: str | None) -> ToolCall:
    # An "*** Update File" of the whole old text, where the cat showed it, so Codex's request
    # says what it replaces (an "*** Add File" over a file that is there replaces it, silently
    # reading like a new file).
    old = cat_back(read) if read is not None else None
    patch = _patch_replacing(path, old, text) if old and old != text else _patch_adding(path, text)
    if "apply_patch" in tools.freeform:
        return ToolCall("apply_patch", patch, freeform=True)
    return ToolCall("apply_patch", json.dumps({"input": patch}))


EDIT_TOOLS = ("Write", "write_file", "apply_patch")
RUN_TOOLS = ("Bash", "run_shell_command", "exec_command", "shell_command", "shell")


# Claude Code's Read shows each line after its number and an arrow (a tab in older versions).
_READ_LINE = re.compile(r" *([0-9]+)(?:\u2192|\t)(.*)")
_READ_LIMIT = 2000  # Read shows at most this many lines, each cut at this many characters


def read_back(result: str) -> str | None:
    """The whole text of a file as Claude Code's Read showed it, or None where it showed no
    text (a missing or empty file) or may have cut some off (a long file or line)."""
    lines: list[str] = []
    for raw in result.split("\n"):
        numbered = _READ_LINE.fullmatch(raw)
        if numbered is None or int(numbered[1]) != len(lines) + 1:
            break  # the system reminder Claude Code appends, or the end
        lines.append(numbered[2])
    if not lines or len(lines) >= _READ_LIMIT or any(len(li) >= _READ_LIMIT for li in lines):
        return None
    return "\n".join(lines)


def _claude_write(tools: DeclaredTools, file_path: str, text: str, read: str | None) -> ToolCall:
    # An Edit of the whole old text, where Read showed it, so the agent's permission request
    # carries the old text beside the new (its Write request carries the new text only).
    old = read_back(read) if read is not None else None
    if old and old != text and tools.has("Edit"):
        edit = {"file_path": file_path, "old_string": old, "new_string": text}
        return ToolCall("Edit", json.dumps(edit))
    return ToolCall("Write", json.dumps({"file_path": file_path, "content": text}))


def edit_calls(
    tools: DeclaredTools, *, path: str, text: str, read: str | None = None
) -> tuple[ToolCall, ...]:
    """The agent's own calls that write ``text`` to ``path``, in order; () if it declares none.
    Each agent first looks at the file (Claude Code's Write refuses to replace a file it has not
    read in the session, "File has not been read yet"; Codex's patch must know the old lines to
    update them): Claude Code with Read, Codex with a `cat` (a plain read it runs without
    asking). A missing file shows as an error, harmlessly. ``read`` is what that look gave back,
    once it has: a file that is there is then replaced by an edit of its whole text (Claude Code
    Edit, Codex "*** Update File"), so the agent's permission request shows old and new."""
    for name in EDIT_TOOLS:
        if not tools.has(name):
            continue
        if name == "apply_patch":
            if tools.has("exec_command"):
                look = ToolCall("exec_command", json.dumps({"cmd": f"cat {shlex.quote(path)}"}))
                return (look, _codex_patch(tools, path, text, read))
            return (_codex_patch(tools, path, text, None),)
        file_path = _absolute(tools, path)
        if name == "Write" and tools.has("Read"):
            look = ToolCall("Read", json.dumps({"file_path": file_path}))
            return (look, _claude_write(tools, file_path, text, read))
        return (ToolCall(name, json.dumps({"file_path": file_path, "content": text})),)
    return ()


def run_call(tools: DeclaredTools, *, command: str) -> ToolCall | None:
    """The agent's own call that runs ``command`` in a shell, or None if it declares none."""
    for name in RUN_TOOLS:
        if not tools.has(name):
            continue
        arguments: dict[str, Any]
        if name in ("Bash", "run_shell_command"):
            arguments = {"command": command, "description": _DESCRIPTION}
        elif name == "exec_command":
            arguments = {"cmd": command}
        elif name == "shell_command":
            arguments = {"command": command}
        else:
            arguments = {"command": ["bash", "-lc", command]}
        return ToolCall(name, json.dumps(arguments))
    return None


# Narrow on purpose: "Permission denied" from a command that ran is a failure, not a refusal.
_REFUSED = re.compile(
    r"reject|refused|declin|cancel+ed|not allowed|did not allow|does(?:n't| not) want|"
    r"denied by|not approved",
    re.IGNORECASE,
)
_FAILED = re.compile(
    r"\berror\b|tool_use_error|failed|exit(?:ed with)? code:? [1-9]", re.IGNORECASE
)
RESULT_EXCERPT_CHARS = 160


def tool_outcome(result: str) -> str:
    """How the tool's result reads: "refused", "failed" or "succeeded" (by its words; agents
    send a refusal back as ordinary result text)."""
    if _REFUSED.search(result):
        return "refused"
    if _FAILED.search(result):
        return "failed"
    return "succeeded"


def result_excerpt(result: str) -> str:
    flat = " ".join(result.split())
    if len(flat) <= RESULT_EXCERPT_CHARS:
        return flat
    return flat[: RESULT_EXCERPT_CHARS - 1] + "…"
