"""Agent answers as markdown, rendered on the server and sanitised before a browser sees them.

markdown-it-py parses (CommonMark plus tables and strikethrough, raw HTML off), Pygments
highlights fenced code, and nh3 (Ammonia) cleans the result against a short allowlist: whatever
the model writes, no script, event-handler attribute, style or ``javascript:`` link survives.
nh3 is the last step on purpose, so a parser or highlighter bug can't reach the page.

Only finished answers are rendered: while a message streams its appended text stays plain (the
browser appends escaped text by offset); the closing ``message.updated`` replaces the row once
with this rendering. User prompts are never rendered: they stay escaped plain text.

``make highlight-css`` writes static/css/highlight.css from the same Pygments styles named here.
"""

from __future__ import annotations

from functools import lru_cache

import nh3
from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

register = template.Library()

LIGHT_STYLE = "friendly"
DARK_STYLE = "github-dark"
CODE_SCOPE = ".md .code-block pre"  # highlight.css rules apply only inside rendered answers
_MAX_HIGHLIGHT_CHARS = 20_000  # a huge block is shown plain rather than tokenised per render

ALLOWED_TAGS = frozenset({
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "ul", "ol", "li",
    "strong", "em", "del", "s", "code", "pre", "span", "a",
    "table", "thead", "tbody", "tr", "th", "td",
})  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "code": {"class"},
    "span": {"class"},
    "ol": {"start"},
    "th": {"style"},
    "td": {"style"},
}
SAFE_URL_SCHEMES = frozenset({"http", "https", "mailto"})

_formatter = HtmlFormatter(nowrap=True)


def _highlight(code: str, lang: str, _attrs: object) -> str:
    """Pygments spans for a fenced block with a known language; "" lets markdown-it escape it."""
    name = (lang or "").strip().split()[0] if lang and lang.strip() else ""
    if not name or len(code) > _MAX_HIGHLIGHT_CHARS:
        return ""
    try:
        lexer = get_lexer_by_name(name, stripnl=False)
    except ClassNotFound:
        return ""
    return highlight(code, lexer, _formatter)


_markdown = (
    MarkdownIt("commonmark", {"html": False, "highlight": _highlight})
    .enable("table")
    .enable("strikethrough")
)

_COPY_BUTTON = (
    '<div class="code-block"><button type="button" class="btn btn--quiet copy" data-copy="code" '
    'aria-label="Copy code">Copy</button><pre tabindex="0"'
)


def _with_copy_buttons(clean: str) -> str:
    # Safe on sanitised output: a literal "<pre" can only be a real element there (text is
    # escaped), code inside a pre is escaped too, so "</pre>" closes exactly that element.
    # Code blocks and tables scroll sideways, so each takes keyboard focus (tabindex 0) and can be
    # scrolled without a mouse (axe-core's scrollable-region-focusable).
    with_buttons = clean.replace("<pre", _COPY_BUTTON).replace("</pre>", "</pre></div>")
    return with_buttons.replace("<table", '<table tabindex="0"')


def sanitise(html: str) -> str:
    return nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        attributes={tag: set(names) for tag, names in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(SAFE_URL_SCHEMES),
        link_rel="noopener noreferrer",
        set_tag_attribute_values={"a": {"target": "_blank"}},
        filter_style_properties={"text-align"},
        strip_comments=True,
    )


@lru_cache(maxsize=512)
def _render(text: str) -> str:
    return _with_copy_buttons(sanitise(_markdown.render(text)))


def render_answer(text: str | None) -> SafeString:
    """An answer's markdown as sanitised HTML (empty text renders as nothing)."""
    if not text:
        return mark_safe("")
    try:
        return mark_safe(_render(text))  # sanitised by nh3 in _render
    except Exception:  # noqa: BLE001 - a renderer bug must never hide an answer
        return mark_safe(f"<p>{escape(text)}</p>")


@register.filter
def answer_html(text: str | None) -> SafeString:
    return render_answer(text)


def _scoped_rules(style: str) -> str:
    # Token and background rules only: Pygments' line-number and bare "pre" rules would leak.
    formatter = HtmlFormatter(style=style)
    rules = formatter.get_background_style_defs(CODE_SCOPE) + formatter.get_token_style_defs(
        CODE_SCOPE
    )
    return "\n".join(rules)


def highlight_css() -> str:
    """The stylesheet for highlighted code: light by default, dark under prefers-color-scheme."""
    light, dark = (_scoped_rules(style) for style in (LIGHT_STYLE, DARK_STYLE))
    indented = "\n".join(f"  {line}" if line else line for line in dark.splitlines())
    return (
        "/* Generated by `make highlight-css` from sessions_app/templatetags/answers.py. */\n"
        f"{light}\n@media (prefers-color-scheme: dark) {{\n{indented}\n}}\n"
    )
