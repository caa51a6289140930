"""A tool call's content and locations (ACP ``ToolCallContent``, ``ToolCallLocation``) read into
neutral values, bounded and redacted.

Every text an agent puts here is its tool's output or a file's text: a secret the tool printed or
a file held must not reach a transcript, so each text is redacted (credential tier) before
anything else sees it, and again with the session's own key values by the output redactor
(``redaction.py``). Bounds apply after redaction, so a cut never leaves the start of a secret
that the whole would have matched; a text longer than ``RAW_LIMIT_CHARS`` is cut first (redacting
megabytes per update would stall the prompt), far beyond what is kept.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from recovery.providers.acp.agent_events import (
    AgentToolCall,
    AgentToolCallUpdate,
    ToolBlock,
    ToolDiff,
    ToolLocation,
    ToolTerminal,
    ToolText,
)
from recovery.redact import redact_credentials

# What one text block keeps, in UTF-8 bytes; a diff side over DIFF_SIDE_LIMIT_BYTES is dropped.
TEXT_LIMIT_BYTES = 16 * 1024
DIFF_SIDE_LIMIT_BYTES = 256 * 1024
RAW_LIMIT_CHARS = 512 * 1024
MAX_BLOCKS = 16
MAX_LOCATIONS = 50
PATH_LIMIT_CHARS = 1024


def tool_blocks(content: Any) -> tuple[ToolBlock, ...] | None:
    """The blocks of an ACP ``content`` list; None when the update carried no list (nothing to
    replace), unknown items skipped."""
    if not isinstance(content, list):
        return None
    blocks: list[ToolBlock] = []
    for item in content:
        block = _block(item) if isinstance(item, Mapping) else None
        if block is not None:
            blocks.append(block)
        if len(blocks) == MAX_BLOCKS:
            break
    return tuple(blocks)


def tool_locations(locations: Any) -> tuple[ToolLocation, ...] | None:
    if not isinstance(locations, list):
        return None
    found: list[ToolLocation] = []
    for item in locations[:MAX_LOCATIONS]:
        path = item.get("path") if isinstance(item, Mapping) else None
        if not isinstance(path, str) or not path:
            continue
        line = item.get("line")
        number = line if isinstance(line, int) and not isinstance(line, bool) else None
        found.append(ToolLocation(path=_path(path), line=number))
    return tuple(found)


def block_texts(blocks: Iterable[ToolBlock] | None) -> list[str]:
    """The text blocks' texts, for the row's plain text and the evidence layer."""
    return [block.text for block in blocks or () if isinstance(block, ToolText) and block.text]


def tool_event_redacted(
    event: AgentToolCall | AgentToolCallUpdate, *, known_values: tuple[str, ...]
) -> AgentToolCall | AgentToolCallUpdate:
    """``event`` with the session's own key values taken out of every text it carries (the
    catalogue's formats were taken out when it was converted)."""
    if not known_values:
        return event

    def clean(text: str) -> str:
        return redact_credentials(text, known_values=known_values)

    changes: dict[str, Any] = {}
    if event.blocks is not None:
        changes["blocks"] = tuple(_redact_block(block, clean) for block in event.blocks)
    if event.title is not None:
        changes["title"] = clean(event.title)
    if event.locations is not None:
        changes["locations"] = tuple(
            dataclasses.replace(where, path=clean(where.path)) for where in event.locations
        )
    if isinstance(event, AgentToolCallUpdate):
        changes["content"] = clean(event.content)
    return dataclasses.replace(event, **changes)


def _redact_block(block: ToolBlock, clean: Callable[[str], str]) -> ToolBlock:
    if isinstance(block, ToolText):
        return dataclasses.replace(block, text=clean(block.text))
    if isinstance(block, ToolDiff):
        old = None if block.old_text is None else clean(block.old_text)
        return dataclasses.replace(
            block, path=clean(block.path), old_text=old, new_text=clean(block.new_text)
        )
    return block


def _block(item: Mapping[str, Any]) -> ToolBlock | None:
    kind = item.get("type")
    if kind == "content":
        inner = item.get("content")
        if isinstance(inner, Mapping) and inner.get("type") == "text":
            text = inner.get("text")
            if isinstance(text, str) and text:
                kept, omitted = _bounded(
                    redact_credentials(text[:RAW_LIMIT_CHARS]), TEXT_LIMIT_BYTES
                )
                omitted += _utf8_len(text[RAW_LIMIT_CHARS:])
                return ToolText(text=kept, omitted_bytes=omitted)
        return None
    if kind == "diff":
        return _diff(item)
    if kind == "terminal":
        terminal_id = item.get("terminalId")
        return (
            ToolTerminal(terminal_id=_path(terminal_id)) if isinstance(terminal_id, str) else None
        )
    return None


def _diff(item: Mapping[str, Any]) -> ToolDiff | None:
    path, old, new = item.get("path"), item.get("oldText"), item.get("newText")
    if not isinstance(path, str) or not isinstance(new, str) or not isinstance(old, str | None):
        return None
    size = _utf8_len(new) + (_utf8_len(old) if old else 0)
    if size > DIFF_SIDE_LIMIT_BYTES * 2 or max(len(new), len(old or "")) > DIFF_SIDE_LIMIT_BYTES:
        # A cut file would show as lines deleted that the agent never touched: say it is too
        # large instead of showing a wrong diff.
        return ToolDiff(path=_path(path), old_text="", new_text="", omitted_bytes=size)
    return ToolDiff(
        path=_path(path),
        old_text=None if old is None else redact_credentials(old),
        new_text=redact_credentials(new),
    )


def _path(value: str) -> str:
    return redact_credentials(value[:PATH_LIMIT_CHARS])


def _bounded(text: str, limit: int) -> tuple[str, int]:
    encoded = text.encode("utf-8", errors="surrogatepass")
    if len(encoded) <= limit:
        return text, 0
    kept = encoded[:limit].decode("utf-8", errors="ignore")
    return kept, len(encoded) - _utf8_len(kept)


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", errors="surrogatepass"))
