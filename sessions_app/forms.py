"""Forms of the web pages. Validation of the prompt itself lives in the service (one rule for the
web page and the API); these only shape the input."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.core.validators import ProhibitNullCharactersValidator

from sessions_app.models import ProviderTarget


class SessionCreateForm(forms.Form):
    title = forms.CharField(max_length=200, strip=True)
    target = forms.ModelChoiceField(
        queryset=ProviderTarget.objects.all(),
        error_messages={"invalid_choice": "Pick one of the listed targets."},
    )
    # Empty: a new task named after the session. Otherwise the id of one of the user's tasks
    # (checked by the view against the user's own tasks, so a foreign id is a 404).
    task = forms.IntegerField(required=False, min_value=1, max_value=2**63 - 1)
    # A new task only: the id of a project the user may use. Checked by the service, which
    # answers an unknown and a forbidden id alike.
    project = forms.IntegerField(required=False, min_value=1, max_value=2**63 - 1)


class TaskRenameForm(forms.Form):
    title = forms.CharField(max_length=200, strip=True)


class PromptForm(forms.Form):
    # strip=False: the service trims and rejects blank text with the message the API gives too.
    text = forms.CharField(required=False, strip=False, max_length=settings.KANDEV_MAX_PROMPT_CHARS)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # NUL too is the service's to refuse (sessions_app/text_rules.py), in the API's words.
        field = self.fields["text"]
        field.validators = [
            v for v in field.validators if not isinstance(v, ProhibitNullCharactersValidator)
        ]
