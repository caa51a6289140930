"""A tool call's content and locations as a transcript row keeps them (``Message.metadata``).

``metadata["content"]`` is a list of blocks, each a dict with a ``type``:

- ``text``: ``text`` and ``omitted_bytes`` (what was not kept);
- ``diff``: ``path``, ``patch`` (``sessions_app.diffs.unified_diff`` of the agent's old and new
  text), ``added``, ``removed``, ``new_file``, ``omitted_bytes`` (of a patch over the bound, or
  of a file too large to diff, whose ``patch`` is then "");
- ``terminal``: ``terminal_id`` (ACP carries only the id; its output is the client's).

``metadata["locations"]`` lists ``{"path", "line"}``. All of a row's blocks together keep at
most ``CONTENT_LIMIT_BYTES`` of text, so a row, its frame and its page stay small; each block
says how much of it was not kept. Everything here was redacted where the event was converted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from recovery.providers.acp.agent_events import (
    ToolBlock,
    ToolDiff,
    ToolLocation,
    ToolTerminal,
    ToolText,
)
from sessions_app.diffs import diff_stats, unified_diff

CONTENT_LIMIT_BYTES = 48 * 1024


def content_stored(blocks: Iterable[ToolBlock]) -> list[dict[str, Any]]:
    stored: list[dict[str, Any]] = []
    room = CONTENT_LIMIT_BYTES
    for block in blocks:
        if isinstance(block, ToolText):
            text, cut = _within(block.text, room)
            room -= _size(text)
            stored.append(
                {"type": "text", "text": text, "omitted_bytes": block.omitted_bytes + cut}
            )
        elif isinstance(block, ToolDiff):
            entry = _diff_stored(block, room)
            room -= _size(entry["patch"])
            stored.append(entry)
        elif isinstance(block, ToolTerminal):
            stored.append({"type": "terminal", "terminal_id": block.terminal_id})
    return stored


def locations_stored(locations: Iterable[ToolLocation]) -> list[dict[str, Any]]:
    return [{"path": where.path, "line": where.line} for where in locations]


def _diff_stored(block: ToolDiff, room: int) -> dict[str, Any]:
    patch = ""
    if not block.omitted_bytes:
        patch = unified_diff(path=block.path, old=block.old_text or "", new=block.new_text)
    stats = diff_stats(patch)
    kept, cut = _within_lines(patch, room)
    return {
        "type": "diff",
        "path": block.path,
        "patch": kept,
        "added": sum(s.added for s in stats),
        "removed": sum(s.removed for s in stats),
        "new_file": block.old_text is None or block.old_text == "",
        "omitted_bytes": block.omitted_bytes + cut,
    }


def _within(text: str, room: int) -> tuple[str, int]:
    size = _size(text)
    if size <= room:
        return text, 0
    kept = text.encode("utf-8", errors="surrogatepass")[: max(room, 0)]
    decoded = kept.decode("utf-8", errors="ignore")
    return decoded, size - _size(decoded)


def _within_lines(patch: str, room: int) -> tuple[str, int]:
    # A patch is cut between lines, so what is shown still parses as a diff.
    kept, cut = _within(patch, room)
    if not cut:
        return kept, 0
    whole = kept[: kept.rfind("\n") + 1]
    return whole, _size(patch) - _size(whole)


def _size(text: str) -> int:
    return len(text.encode("utf-8", errors="surrogatepass"))
