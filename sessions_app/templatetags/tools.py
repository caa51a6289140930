"""A tool call as people read it: its kind, title, status, the files it touched, its content.

Content blocks are the agent's (``sessions_app/agent/tool_rows.py`` says how they are kept): a diff
goes through the shared renderer (``sessions_app.diffs.diff_html``), an ``execute`` tool's text
through the terminal renderer (ANSI colours as classes), any other text is shown as plain escaped
text with its escape sequences dropped. Each block is a ``<details>``: a short one carries
``data-open-wide`` and live.js opens it on a wide screen, so a phone shows every block closed and a
desktop shows the short ones open; without script every block starts closed.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from sessions_app.diffs import diff_html
from sessions_app.terminal import ansi_strip, terminal_html

register = template.Library()

# Lines up to which a block is "short" (opened on a wide screen).
SHORT_BLOCK_LINES = 30

_KINDS: dict[str, tuple[str, str]] = {
    "read": ("\N{OPEN BOOK}", "Read"),
    "edit": ("\N{LOWER RIGHT PENCIL}", "Edit"),
    "delete": ("\N{CROSS MARK}", "Delete"),
    "move": ("\N{RIGHTWARDS ARROW OVER LEFTWARDS ARROW}", "Move"),
    "search": ("\N{LEFT-POINTING MAGNIFYING GLASS}", "Search"),
    "execute": ("\N{BLACK RIGHT-POINTING TRIANGLE}", "Run"),
    "think": ("\N{THOUGHT BALLOON}", "Think"),
    "fetch": ("\N{GLOBE WITH MERIDIANS}", "Fetch"),
    "switch_mode": ("\N{CLOCKWISE RIGHTWARDS AND LEFTWARDS OPEN CIRCLE ARROWS}", "Mode"),
}
_OTHER = ("\N{GEAR}", "Tool")
# ACP's statuses (and a direct tool's), as the pill says them.
_STATUSES: dict[str, tuple[str, str]] = {
    "pending": ("pending", "Pending"),
    "in_progress": ("running", "Running"),
    "running": ("running", "Running"),
    "completed": ("done", "Done"),
    "done": ("done", "Done"),
    "failed": ("failed", "Failed"),
}


@register.filter
def tool_icon(kind: str | None) -> str:
    return _KINDS.get(kind or "", _OTHER)[0]


@register.filter
def tool_kind_label(kind: str | None) -> str:
    return _KINDS.get(kind or "", _OTHER)[1]


@register.filter
def tool_status_key(status: str | None) -> str:
    """The pill's class suffix: pending, running, done or failed."""
    return _STATUSES.get(status or "", _STATUSES["pending"])[0]


@register.filter
def tool_status_label(status: str | None) -> str:
    return _STATUSES.get(status or "", _STATUSES["pending"])[1]


@register.filter
def tool_blocks(metadata: dict[str, Any] | None) -> list[dict[str, Any]]:
    """An agent's tool row's content blocks; a row kept before blocks were (only its joined
    ``output``) shows that output as one text block."""
    metadata = metadata or {}
    blocks = metadata.get("content")
    if isinstance(blocks, list):
        return blocks
    output = metadata.get("output")
    return [{"type": "text", "text": output}] if isinstance(output, str) and output else []


@register.simple_tag
def tool_block(block: dict[str, Any], *, kind: str, row_id: int, index: int) -> SafeString:
    """One stored content block as a closed ``<details>`` (see the module's docstring); its id,
    ``msg-<row>-block-<index>``, lets a live update keep it open where the reader opened it."""
    block_id = f"msg-{int(row_id)}-block-{int(index)}"
    if not isinstance(block, dict):
        return mark_safe("")
    omitted = _omitted(block.get("omitted_bytes"))
    if block.get("type") == "diff":
        return _diff_block(block, block_id=block_id, omitted=omitted)
    if block.get("type") == "terminal":
        return format_html(
            '<p class="tool-note">Ran in terminal <code>{}</code> (its output stays with the '
            "agent).</p>",
            str(block.get("terminal_id", "")),
        )
    text = str(block.get("text", ""))
    lines = _line_count(text)
    if kind == "execute":
        body = format_html('<pre class="terminal" tabindex="0">{}</pre>', terminal_html(text))
        label = "Terminal output"
    else:
        body = format_html('<pre class="tool-text" tabindex="0">{}</pre>', ansi_strip(text))
        label = "Output"
    summary = format_html("{} {}", label, _lines_label(lines))
    return _details("text", block_id=block_id, lines=lines, summary=summary, body=body + omitted)


def _diff_block(block: dict[str, Any], *, block_id: str, omitted: SafeString) -> SafeString:
    patch = str(block.get("patch", ""))
    lines = _line_count(patch)
    summary = format_html(
        '<code>{}</code> <span class="diff-added">+{}</span> <span class="diff-removed">'
        "\N{MINUS SIGN}{}</span>{} {}",
        str(block.get("path", "")),
        int(block.get("added") or 0),
        int(block.get("removed") or 0),
        " (new file)" if block.get("new_file") else "",
        _lines_label(lines),
    )
    body = diff_html(patch) if patch else mark_safe("")
    return _details("diff", block_id=block_id, lines=lines, summary=summary, body=body + omitted)


def _details(
    variant: str, *, block_id: str, lines: int, summary: SafeString, body: SafeString
) -> SafeString:
    wide = " data-open-wide" if lines <= SHORT_BLOCK_LINES else ""
    return format_html(
        '<details class="tool-block tool-block--{}" id="{}" data-lines="{}"{}>'
        "<summary>{}</summary>{}</details>",
        variant,
        block_id,
        lines,
        mark_safe(wide),
        summary,
        body,
    )


def _omitted(value: Any) -> SafeString:
    count = value if isinstance(value, int) and value > 0 else 0
    if not count:
        return mark_safe("")
    return format_html('<p class="tool-omitted">{} bytes not shown</p>', f"{count:,}")


def _line_count(text: str) -> int:
    # Lines as a terminal or a diff shows them: a final newline ends a line, it starts none.
    return text.count("\n") + (0 if not text or text.endswith("\n") else 1)


def _lines_label(lines: int) -> SafeString:
    return format_html(
        '<span class="tool-lines">({} {})</span>', lines, "line" if lines == 1 else "lines"
    )
