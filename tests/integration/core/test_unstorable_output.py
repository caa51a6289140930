"""A direct provider's output holding characters PostgreSQL refuses (NUL, lone surrogates) is
stored with each one replaced by U+FFFD, on every output path, and the turn ends normally.

The mock provider's `unstorable` scenario sends them as the JSON escapes "\\u0000" and "\\ud800"
(what a provider relaying a binary file would send); the real SDKs decode them over real HTTP,
the real worker code writes them into real Postgres.
"""

from __future__ import annotations

import json
import random

import pytest

from sessions_app.agent.runner import generation_run
from sessions_app.models import Message, Note, PromptGeneration, ProviderTarget, SessionEvent
from sessions_app.selectors import session_snapshot
from sessions_app.services import prompt_submit
from tests.support.factories import ProviderTargetFactory, SessionFactory

pytestmark = pytest.mark.django_db(transaction=True)

FFFD = "\ufffd"


@pytest.fixture(params=["anthropic", "openai"])
def wire_chat(request, owner, mock_provider, monkeypatch):
    if request.param == "openai":
        monkeypatch.setenv("OPENAI_API_KEY", "sk-mock-unstorable")
        target = ProviderTargetFactory(
            name="OpenAI wire",
            kind=ProviderTarget.Kind.OPENAI,
            model="gpt-test",
            base_url=f"{mock_provider.url}/v1",
            api_key_env="OPENAI_API_KEY",
        )
    else:
        target = ProviderTargetFactory(name="Anthropic wire", base_url=mock_provider.url)
    return SessionFactory(owner=owner, target=target, title="Unstorable")


def test_nul_and_lone_surrogates_from_a_provider_are_stored_as_replacement_characters(
    wire_chat, owner
):
    generation = prompt_submit(session=wire_chat, user=owner, text="[[mock:unstorable]] read it")
    generation_run(generation_id=generation.pk, rng=random.Random(7))

    generation.refresh_from_db()
    assert generation.state == PromptGeneration.State.SUCCEEDED, generation.error_message
    rows = list(
        Message.objects.filter(session=wire_chat).order_by("id").values_list("role", "text")
    )
    assert rows[1:] == [
        ("thinking", f"Reading{FFFD} the file{FFFD} now."),
        ("assistant", f"It holds{FFFD} a NUL and{FFFD} a lone surrogate."),
        ("tool_call", f'append_note {{"text": "a{FFFD}b{FFFD}c"}}'),
        ("tool_result", rows[-2][1]),
        ("assistant", f"Done{FFFD} and noted{FFFD}."),
    ]
    assert rows[-2][1].startswith("Saved note #")
    assert Message.objects.get(session=wire_chat, role="tool_call").metadata["arguments"] == {
        "text": f"a{FFFD}b{FFFD}c"
    }
    assert Note.objects.get(session=wire_chat).text == f"a{FFFD}b{FFFD}c"
    # What every viewer was sent says the same, and a reload shows the same.
    payloads = json.dumps(
        list(SessionEvent.objects.filter(session=wire_chat).values_list("payload", flat=True))
    )
    assert "\\u0000" not in payloads and "\\ud800" not in payloads
    shown = [m["text"] for m in session_snapshot(session=wire_chat)["messages"]]
    assert shown[-1] == f"Done{FFFD} and noted{FFFD}."
