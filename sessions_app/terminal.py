"""Terminal output as HTML: ANSI colours become classes, every other escape sequence goes.

A tool's output is whatever the command printed, so it is read as hostile: SGR colour and weight
codes (30-37, 90-97, 40-47, 100-107, 38;5;n and 48;5;n for n < 16, bold, dim, italic,
underline, reset) become ``<span class="ansi-...">``; cursor moves, screen clears, OSC titles
and OSC 8 links, any other CSI or escape and every control character but tab and newline are
dropped, an escape left unterminated included. A carriage return keeps what was written after
it on that line, as a terminal would show a progress bar. Text is HTML-escaped; no style
attribute is ever written (the CSP forbids inline styles); colours live in app.css.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

MAX_TERMINAL_LINES = 500
MAX_LINE_CHARS = 4000

# CSI (7-bit and C1), OSC up to BEL or ST (or, unterminated, to the end of its line), DCS, PM
# and APC strings, any other escape (intermediates, then its final byte) and a lone ESC.
_ESCAPE = re.compile(
    r"(?:\x1b\[|\x9b)(?P<params>[0-?]*)[ -/]*(?P<final>[@-~])?"
    r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[P^_X][^\x1b\n]*(?:\x1b\\)?"
    r"|\x1b[ -/]*[0-~]?"
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


@dataclass(frozen=True, slots=True)
class _Style:
    fg: int | None = None
    bg: int | None = None
    bold: bool = False
    dim: bool = False
    italic: bool = False
    underline: bool = False

    @property
    def classes(self) -> str:
        names = [f"ansi-fg-{self.fg}"] if self.fg is not None else []
        if self.bg is not None:
            names.append(f"ansi-bg-{self.bg}")
        names += [
            name
            for name, on in (
                ("ansi-bold", self.bold),
                ("ansi-dim", self.dim),
                ("ansi-italic", self.italic),
                ("ansi-underline", self.underline),
            )
            if on
        ]
        return " ".join(names)


_PLAIN = _Style()


def ansi_strip(text: str) -> str:
    """``text`` without escape sequences and control characters (tab and newline kept)."""
    return _CONTROLS.sub("", _ESCAPE.sub("", _overwritten(text)))


def terminal_html(text: str) -> SafeString:
    """``text`` as the inside of a ``<pre>``: escaped, coloured by class, at most
    MAX_TERMINAL_LINES lines of at most MAX_LINE_CHARS characters, then how many more."""
    lines = _overwritten(text).split("\n")
    ends_line = len(lines) > 1 and lines[-1] == ""
    if ends_line:  # a final newline ends the last line; it starts no line of its own
        lines.pop()
    more = len(lines) - MAX_TERMINAL_LINES
    style = _PLAIN
    out: list[str] = []
    for number, line in enumerate(lines[:MAX_TERMINAL_LINES]):
        if number:
            out.append("\n")
        rendered, style = _line_html(line, style)
        out.append(rendered)
    if more > 0:
        out.append(f'\n<span class="ansi-more">{more} more lines</span>')
    elif ends_line:
        out.append("\n")
    return mark_safe("".join(out))  # every text run went through escape()


def _overwritten(text: str) -> str:
    lines = text.replace("\r\n", "\n").split("\n")
    return "\n".join(line.rsplit("\r", 1)[-1] if "\r" in line else line for line in lines)


def _line_html(line: str, style: _Style) -> tuple[str, _Style]:
    out: list[str] = []
    shown = 0
    position = 0
    for found in _ESCAPE.finditer(line):
        shown = _run(out, line[position : found.start()], style, shown)
        if found["final"] == "m":
            style = _sgr(style, found["params"] or "")
        position = found.end()
    shown = _run(out, line[position:], style, shown)
    if shown > MAX_LINE_CHARS:
        out.append('<span class="ansi-more">…</span>')
    return "".join(out), style


def _run(out: list[str], text: str, style: _Style, shown: int) -> int:
    text = _CONTROLS.sub("", text)
    room = max(MAX_LINE_CHARS - shown, 0)
    kept = text[:room]
    if kept:
        classes = style.classes
        escaped = escape(kept)
        out.append(f'<span class="{classes}">{escaped}</span>' if classes else escaped)
    return shown + len(text)


def _sgr(style: _Style, params: str) -> _Style:
    codes = [int(p) if p.isdigit() else 0 for p in params.replace(":", ";").split(";")]
    index = 0
    while index < len(codes):
        code = codes[index]
        index += 1
        if code in (38, 48):
            # 5;n is a palette colour (the first 16 are the classes'), 2;r;g;b true colour: the
            # parameters are consumed either way, only a palette colour under 16 is kept.
            mode = codes[index] if index < len(codes) else None
            if mode == 5 and index + 1 < len(codes):
                colour = codes[index + 1]
                index += 2
                if colour < 16:
                    if code == 38:
                        style = replace(style, fg=colour)
                    else:
                        style = replace(style, bg=colour)
            elif mode == 2:
                index += 4
            continue
        style = _sgr_one(style, code)
    return style


def _sgr_one(style: _Style, code: int) -> _Style:
    if code == 0:
        return _PLAIN
    if 30 <= code <= 37:
        return replace(style, fg=code - 30)
    if 90 <= code <= 97:
        return replace(style, fg=code - 90 + 8)
    if 40 <= code <= 47:
        return replace(style, bg=code - 40)
    if 100 <= code <= 107:
        return replace(style, bg=code - 100 + 8)
    flags = {
        1: {"bold": True},
        2: {"dim": True},
        3: {"italic": True},
        4: {"underline": True},
        22: {"bold": False, "dim": False},
        23: {"italic": False},
        24: {"underline": False},
        39: {"fg": None},
        49: {"bg": None},
    }
    change = flags.get(code)
    return replace(style, **change) if change else style  # type: ignore[arg-type]
