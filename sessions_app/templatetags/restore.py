"""The words of Start fresh's offer to put the workspace back (sessions_app/effects/wording.py)."""

from __future__ import annotations

from django import template

from sessions_app.effects import wording

register = template.Library()


@register.filter
def restore_offer(count: int) -> str:
    return wording.restore_offer(int(count))
