"""Diffs as people read them: a unified patch made from two texts, rendered as HTML, counted.

The one diff renderer of the app: an agent's tool call, an approval card and the review page all
show a change through ``diff_html``. The patch is the agent's or the worktree's text, so the HTML
is built by Pygments' diff lexer with classes only (the CSP forbids inline styles), then cleaned
by nh3 against an allowlist of the few tags and classes the formatter writes: a path or line that
holds markup stays text whatever the lexer does with it.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import lru_cache

import nh3
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer

# A diff longer than this is shown up to here, then "N more lines" (the patch stays whole for a
# download; a frame and the phone's layout stay small).
MAX_DIFF_LINES = 400
# Pygments' classes for the tokens a diff has: deleted, inserted, heading, subheading, plain text.
DIFF_CLASSES = frozenset({"gd", "gi", "gh", "gu", "gs", "w", "err", "x", "diff-more"})
_TAGS = frozenset({"pre", "span", "code", "div", "p"})

_formatter = HtmlFormatter(nowrap=True, classprefix="")
_lexer = DiffLexer(stripnl=False, ensurenl=False)


@dataclass(frozen=True, slots=True)
class FileStat:
    path: str
    added: int
    removed: int


def unified_diff(*, path: str, old: str, new: str, context: int = 3) -> str:
    """``old`` -> ``new`` of ``path`` as a git-style unified patch; "" when they are equal.

    ``old=""`` is a new file (``--- /dev/null``), ``new=""`` a deleted one (``+++ /dev/null``);
    the last line without a newline is marked the way git marks it."""
    if old == new:
        return ""
    name = path.lstrip("/")
    source = "/dev/null" if old == "" else f"a/{name}"
    target = "/dev/null" if new == "" else f"b/{name}"
    header = [f"diff --git a/{name} b/{name}\n"]
    if old == "":
        header.append("new file mode 100644\n")
    elif new == "":
        header.append("deleted file mode 100644\n")
    lines = difflib.unified_diff(
        _lines(old), _lines(new), fromfile=source, tofile=target, n=context
    )
    body: list[str] = []
    for line in lines:
        if line.endswith("\n"):
            body.append(line)
        else:
            body.append(line + "\n\\ No newline at end of file\n")
    return "".join(header + body)


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True) if text else []


def diff_stats(patch: str) -> list[FileStat]:
    """Lines added and removed per file of a unified patch (git's or ``unified_diff``'s)."""
    stats: list[FileStat] = []
    path, added, removed, in_hunk = None, 0, 0, False
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            if path is not None:
                stats.append(FileStat(path=path, added=added, removed=removed))
            path, added, removed, in_hunk = _git_path(line), 0, 0, False
        elif line.startswith("@@"):
            in_hunk = True
        elif not in_hunk and line.startswith(("+++ ", "--- ")):
            # Headers only before a hunk: a removed line "-- x" reads "--- x" inside one.
            named = line[4:].strip()
            if named != "/dev/null" and path is None:
                path = named[2:] if named[:2] in ("a/", "b/") else named
        elif in_hunk and line.startswith("+"):
            added += 1
        elif in_hunk and line.startswith("-"):
            removed += 1
    if path is not None:
        stats.append(FileStat(path=path, added=added, removed=removed))
    return stats


def _git_path(line: str) -> str:
    # "diff --git a/x b/x": the b/ side names the file as it is now.
    rest = line[len("diff --git ") :]
    marker = rest.rfind(" b/")
    return rest[marker + 3 :] if marker >= 0 else rest


def diff_html(patch: str) -> SafeString:
    """``patch`` as sanitised HTML: one ``<pre class="diff">`` of classed lines, at most
    MAX_DIFF_LINES of them, then how many more there are."""
    return mark_safe(_diff_html(patch))  # cleaned by nh3 in _diff_html


@lru_cache(maxsize=256)
def _diff_html(patch: str) -> str:
    lines = patch.splitlines(keepends=True)
    shown = "".join(lines[:MAX_DIFF_LINES])
    more = len(lines) - MAX_DIFF_LINES
    try:
        body = highlight(shown, _lexer, _formatter)
    except Exception:  # noqa: BLE001 - a lexer bug must never hide a change
        body = escape(shown)
    tail = f'<p class="diff-more">{more} more lines</p>' if more > 0 else ""
    html = f'<pre class="diff" tabindex="0"><code>{body}</code></pre>{tail}'
    return _clean(html)


def _clean(html: str) -> str:
    return nh3.clean(
        html,
        tags=set(_TAGS),
        attributes={"pre": {"tabindex"}},
        allowed_classes={
            "pre": {"diff"},
            "span": set(DIFF_CLASSES),
            "p": {"diff-more"},
        },
        strip_comments=True,
    )
