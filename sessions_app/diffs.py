"""A patch rendered as HTML.

Placeholder: replaced at merge by the display helper's version (Pygments' diff lexer, sanitised);
this one only escapes the text.
"""

from __future__ import annotations

from django.utils.html import format_html
from django.utils.safestring import SafeString


def diff_html(patch: str) -> SafeString:
    return format_html('<pre class="diff">{}</pre>', patch)
