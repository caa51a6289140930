"""The review's filters: a file's patch rendered (sessions_app/diffs.py)."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString

from sessions_app.diffs import diff_html

register = template.Library()


@register.filter(name="diff")
def diff(patch: str) -> SafeString:
    return diff_html(patch)
