"""Every model has a working, read-mostly admin."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.test import Client

from sessions_app.api_auth import api_token_create
from sessions_app.models import MessageChunk, Note, TargetFallback
from sessions_app.services import prompt_submit

pytestmark = pytest.mark.django_db


def test_each_sessions_model_has_a_changelist_and_change_page_that_render(session, owner):
    prompt_submit(session=session, user=owner, text="hello")
    Note.objects.create(session=session, tool_call_id="t1", text="a note")
    api_token_create(user=owner)
    operator = get_user_model().objects.create_superuser(username="ops", email="ops@example.test")
    client = Client()
    client.force_login(operator)

    models = [m for m in admin.site._registry if m._meta.app_label == "sessions_app"]
    # Fallback links are edited inline on their target; a message's chunks are shown in its text.
    assert set(models) == set(apps.get_app_config("sessions_app").get_models()) - {
        TargetFallback,
        MessageChunk,
    }
    for model in models:
        base = f"/admin/sessions_app/{model._meta.model_name}/"
        assert client.get(base).status_code == 200, base
        first = model.objects.first()
        assert client.get(f"{base}{first.pk}/change/").status_code == 200, base
