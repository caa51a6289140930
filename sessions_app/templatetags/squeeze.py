"""``{% squeeze %}…{% endsqueeze %}``: the live partials are written one element per line and
indented, and render as compact as if they had been written on one line.

The squeeze runs once, when the template is compiled, and only on the template's own literal
text: a run of whitespace that holds a line break becomes one space between two attributes of a
tag, one space between two words of wrapped prose, and nothing between elements (or between an
element and a template tag or variable). Rendered values (a message's text, an answer's HTML
with its ``<pre>`` blocks) are never touched, so nothing a person reads changes, and a frame
carries no indentation.
``{% space %}`` writes the one space that must separate two inline elements on their own lines.
"""

from __future__ import annotations

import re

from django import template
from django.template.base import NodeList, Parser, TextNode, Token
from django.template.context import Context

register = template.Library()

_BROKEN_WHITESPACE = re.compile(r"\s*\n\s*")


class _Squeezer:
    """Squeezes a template's literal texts in source order, knowing whether each line break
    falls inside an HTML tag (between its attributes) or between elements."""

    def __init__(self) -> None:
        self.in_tag = False

    def squeezed(self, text: str) -> str:
        parts: list[str] = []
        done = 0
        for match in _BROKEN_WHITESPACE.finditer(text):
            self._track(text[done : match.start()])
            parts.append(text[done : match.start()])
            parts.append(self._join(text, match))
            done = match.end()
        self._track(text[done:])
        parts.append(text[done:])
        return "".join(parts)

    def _track(self, literal: str) -> None:
        opened, closed = literal.rfind("<"), literal.rfind(">")
        if opened != closed:  # both -1 when the literal has neither
            self.in_tag = opened > closed

    def _join(self, text: str, match: re.Match[str]) -> str:
        before = text[match.start() - 1] if match.start() else ""
        after = text[match.end()] if match.end() < len(text) else ""
        if self.in_tag:
            # Between two attributes: one space, none before the tag's closing ">".
            return "" if after == ">" else " "
        # Between elements nothing; inside wrapped prose one space between its words.
        return " " if before not in ("", ">") and after not in ("", "<") else ""


class SqueezeNode(template.Node):
    def __init__(self, nodelist: NodeList) -> None:
        self.nodelist = nodelist

    def render(self, context: Context) -> str:
        return self.nodelist.render(context)


@register.tag
def squeeze(parser: Parser, token: Token) -> SqueezeNode:
    nodelist = parser.parse(("endsqueeze",))
    parser.delete_first_token()
    squeezer = _Squeezer()
    for node in nodelist.get_nodes_by_type(TextNode):  # in source order
        if isinstance(node, TextNode):  # get_nodes_by_type is typed as any Node
            node.s = squeezer.squeezed(node.s)
    return SqueezeNode(nodelist)


@register.simple_tag
def space() -> str:
    return " "
