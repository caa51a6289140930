"""Every direct-provider output path is redacted, the worker's own configured key included.

The mock provider plays a careless gateway that streams the caller's credential back in
4-character pieces (thinking, text, a tool call's arguments, and the answer after the tool), or
quotes it in an error. The key is shaped like no known format, so only the worker's configured
key values (KANDEV_PROVIDER_KEY_ENVS) can remove it. Real Postgres, real SDK over HTTP.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator

import pytest
from django.conf import settings

from recovery.redact import REDACTED, worker_values_set
from sessions_app.agent import direct
from sessions_app.agent.runner import generation_run
from sessions_app.agent.tools import ToolOutput
from sessions_app.ladder.models import AttemptRecord
from sessions_app.models import Message, Note, PromptGeneration, SessionEvent
from sessions_app.services import prompt_submit
from tests.support.factories import ProviderTargetFactory, SessionFactory

pytestmark = pytest.mark.django_db(transaction=True)

WORKER_KEY = "kdvworker.Q7x2m9Lp.r4Tz8wVn"  # no secret format matches it: only the value does


@pytest.fixture
def worker_key(monkeypatch) -> Iterator[str]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", WORKER_KEY)
    worker_values_set(os.environ.get(name, "") for name in settings.KANDEV_PROVIDER_KEY_ENVS)
    yield WORKER_KEY
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    worker_values_set(os.environ.get(name, "") for name in settings.KANDEV_PROVIDER_KEY_ENVS)


@pytest.fixture
def keyed_chat(owner, mock_provider, worker_key):
    target = ProviderTargetFactory(
        name="Keyed mock", base_url=mock_provider.url, api_key_env="ANTHROPIC_API_KEY"
    )
    return SessionFactory(owner=owner, target=target, title="Keyed")


def everything_stored(session) -> str:
    rows = Message.objects.filter(session=session).values("text", "metadata")
    events = SessionEvent.objects.filter(session=session).values_list("payload", flat=True)
    notes = Note.objects.filter(session=session).values_list("text", flat=True)
    records = AttemptRecord.objects.filter(session=session).values()
    generations = PromptGeneration.objects.filter(session=session).values("error_message")
    return json.dumps(
        [list(rows), list(events), list(notes), list(records), list(generations)], default=str
    )


def test_a_key_streamed_back_in_pieces_is_removed_from_every_output_path(
    keyed_chat, owner, mock_provider, worker_key
):
    generation = prompt_submit(session=keyed_chat, user=owner, text="/echo-credentials-stream hi")
    generation_run(generation_id=generation.pk, rng=random.Random(7))

    generation.refresh_from_db()
    assert generation.state == PromptGeneration.State.SUCCEEDED
    # The key was really sent (the request log holds its fingerprint, never the key).
    assert mock_provider.fingerprint(worker_key) in json.dumps(mock_provider.requests()[0])
    stored = everything_stored(keyed_chat)
    assert worker_key not in stored
    assert worker_key[4:12] not in stored  # no piece of it either
    by_role = {
        role: text
        for role, text in Message.objects.filter(session=keyed_chat).values_list("role", "text")
    }
    # Each path keeps its own words around the key.
    assert by_role["thinking"] == f"The key is {REDACTED} as sent."
    assert by_role["tool_call"] == f'append_note {{"text": "remember {REDACTED}"}}'
    assert Note.objects.get(session=keyed_chat).text == f"remember {REDACTED}"
    assert by_role["tool_result"].startswith("Saved note #")
    answers = Message.objects.filter(session=keyed_chat, role="assistant").order_by("id")
    assert answers[0].text == f"Your key is {REDACTED}, keep it safe."
    assert answers[1].text.endswith(f"key {REDACTED}")


def test_a_key_quoted_in_an_error_never_reaches_the_card_or_the_records(
    keyed_chat, owner, mock_provider, worker_key
):
    generation = prompt_submit(session=keyed_chat, user=owner, text="/echo-credentials hi")
    generation_run(generation_id=generation.pk, rng=random.Random(7))

    generation.refresh_from_db()
    assert generation.state == PromptGeneration.State.FAILED
    assert worker_key not in everything_stored(keyed_chat)


def test_a_tool_result_quoting_the_key_is_redacted_before_it_is_written(
    keyed_chat, owner, mock_provider, worker_key, monkeypatch
):
    real = direct.tool_run

    def tool_run(**kwargs):  # the real tool, whose output then quotes the key (a log line, say)
        output = real(**kwargs)
        return ToolOutput(content=f"{output.content} (authenticated as {worker_key})")

    monkeypatch.setattr(direct, "tool_run", tool_run)
    generation = prompt_submit(
        session=keyed_chat, user=owner, text='/tool append_note {"text": "buy milk"} please'
    )
    generation_run(generation_id=generation.pk, rng=random.Random(7))

    result = Message.objects.get(session=keyed_chat, role="tool_result")
    assert result.text.endswith(f"(authenticated as {REDACTED})")
    assert worker_key not in everything_stored(keyed_chat)
    # The next model call carried the redacted result (the mock's answer quotes what it got).
    final = Message.objects.filter(session=keyed_chat, role="assistant").last()
    assert f"(authenticated as {REDACTED})" in final.text
