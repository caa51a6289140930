"""Reading a request's conversation on each wire: the person's words, tool results, its size.

"The latest user text" is the last text block of the last user message that has text, once the
`<system-reminder>` blocks agents add (Claude Code puts them before the person's words, sometimes
after) are taken out. The last block, not the whole message: when a turn is stopped and the
person writes again, our app merges both prompts into one user message, and the stopped prompt's
scenario must not leak into the new one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)


@dataclass(frozen=True, slots=True)
class History:
    first_user_text: str  # the whole first user message: with the wire, it names a conversation
    latest_user_text: str
    tool_result: str | None  # the latest tool result after the latest user text, if any
    tool_results_seen: int
    word_count: int
    roles: tuple[str, ...]  # the shape of the history, so tests see what a retry sent back
    tool_results_since_prompt: int = 0  # how far a multi-call script has got in this prompt


def latest_words(blocks: list[str]) -> str:
    for block in reversed(blocks):
        words = _REMINDER.sub("", block).strip()
        if words:
            return words
    return ""


@dataclass
class _Reader:
    first: str | None = None
    latest: str = ""
    tool_result: str | None = None
    seen: int = 0
    since_prompt: int = 0
    words: int = 0
    roles: list[str] = field(default_factory=list)

    def count(self, text: str) -> None:
        self.words += len(text.split())

    def user_text(self, blocks: list[str], *, after_tool_results: bool = False) -> None:
        joined = " ".join(b.strip() for b in blocks if b.strip())
        if not joined:
            return
        if self.first is None:
            self.first = joined
        self.latest = latest_words(blocks)
        if not after_tool_results:
            self.tool_result = None
            self.since_prompt = 0

    def tool(self, output: str) -> None:
        self.seen += 1
        self.since_prompt += 1
        self.tool_result = output

    def history(self) -> History:
        return History(
            self.first or "",
            self.latest,
            self.tool_result,
            self.seen,
            self.words,
            tuple(self.roles),
            self.since_prompt,
        )


def _texts(content: Any, kinds: tuple[str, ...] = ("text",)) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        str(block.get("text", ""))
        for block in content
        if isinstance(block, dict) and block.get("type") in kinds
    ]


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    texts = _texts(output, ("text", "input_text", "output_text"))
    return " ".join(texts) if texts else json.dumps(output)


def anthropic_history(body: dict) -> History:
    reader = _Reader()
    reader.count(" ".join(_texts(body.get("system", ""))))
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        reader.roles.append(str(message.get("role")))
        content = message.get("content")
        texts = _texts(content)
        reader.count(" ".join(texts))
        if message.get("role") != "user":
            continue
        results = (
            [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
            if isinstance(content, list)
            else []
        )
        for result in results:
            reader.tool(_output_text(result.get("content", "")))
        reader.user_text(texts, after_tool_results=bool(results))
    return reader.history()


def openai_history(body: dict) -> History:
    reader = _Reader()
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        reader.roles.append(str(role))
        texts = _texts(message.get("content"))
        reader.count(" ".join(texts))
        if role == "user":
            reader.user_text(texts)
        elif role == "tool":
            reader.tool(" ".join(texts).strip())
    return reader.history()


_RESPONSES_TEXT = ("input_text", "output_text", "text")


def responses_history(body: dict) -> History:
    reader = _Reader()
    reader.count(" ".join(_texts(body.get("instructions"))))
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message":
            role = str(item.get("role"))
            reader.roles.append(role)
            texts = _texts(item.get("content"), _RESPONSES_TEXT)
            reader.count(" ".join(texts))
            if role == "user":
                reader.user_text(texts)
        elif kind in ("function_call", "custom_tool_call"):
            reader.roles.append(kind)
            reader.count(str(item.get("arguments", item.get("input", ""))))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            reader.roles.append(kind)
            reader.tool(_output_text(item.get("output", "")))
    return reader.history()


def _function_output(response: Any) -> str:
    if isinstance(response, dict):
        for key in ("output", "result", "content"):
            if isinstance(response.get(key), str):
                return response[key]
    return json.dumps(response)


def gemini_contents(body: dict) -> Any:
    """The contents of a generateContent body, or of the request a countTokens body wraps."""
    wrapped = body.get("generateContentRequest")
    return wrapped.get("contents") if isinstance(wrapped, dict) else body.get("contents")


def gemini_history(body: dict) -> History:
    reader = _Reader()
    system = body.get("systemInstruction") or body.get("system_instruction")
    if isinstance(system, dict):
        parts = system.get("parts") or []
        reader.count(" ".join(str(p.get("text", "")) for p in parts if isinstance(p, dict)))
    contents = gemini_contents(body)
    for content in contents if isinstance(contents, list) else []:
        if not isinstance(content, dict):
            continue
        role = str(content.get("role", "user"))
        reader.roles.append(role)
        parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
        texts = [
            p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought")
        ]
        reader.count(" ".join(texts))
        if role != "user":
            continue
        results = [
            p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), dict)
        ]
        for result in results:
            reader.tool(_function_output(result.get("response")))
        reader.user_text(texts, after_tool_results=bool(results))
    return reader.history()
