"""Reading a request's conversation: which conversation, which scenario, which model call."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class History:
    first_user_text: str
    last_user_text: str
    tool_result: str | None  # the latest tool result after the last user text, if any
    tool_results_seen: int
    word_count: int

    @property
    def conversation(self) -> str:
        # Retries re-send the same history, so the first user message names the conversation.
        return hashlib.sha256(self.first_user_text.encode()).hexdigest()[:12]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, dict) and block.get("type") == "text"
        )
    return ""


def _tool_result_text(block: dict) -> str:
    content = block.get("content", "")
    return content if isinstance(content, str) else _text_of(content)


def anthropic_history(body: dict) -> History:
    texts: list[str] = []
    tool_result: str | None = None
    seen = 0
    words = len(_text_of(body.get("system", "")).split())
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        words += len(_text_of(content).split())
        if message.get("role") != "user":
            continue
        text = _text_of(content).strip()
        results = (
            [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
            if isinstance(content, list)
            else []
        )
        if results:
            seen += len(results)
            tool_result = _tool_result_text(results[-1])
        if text:
            texts.append(text)
            if not results:
                tool_result = None
    return History(texts[0] if texts else "", texts[-1] if texts else "", tool_result, seen, words)


def openai_history(body: dict) -> History:
    texts: list[str] = []
    tool_result: str | None = None
    seen = 0
    words = 0
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        text = _text_of(message.get("content")).strip()
        words += len(text.split())
        if role == "user" and text:
            texts.append(text)
            tool_result = None
        elif role == "tool":
            seen += 1
            tool_result = text
    return History(texts[0] if texts else "", texts[-1] if texts else "", tool_result, seen, words)
