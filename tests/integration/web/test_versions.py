"""Versions of a conversation: Regenerate and edits keep every version as a branch, "< 2 / 3 >"
switches the branch shown, and the history the provider receives (read from the mock provider's
request log, as the real SDK sent it) is always the version shown. Real Postgres, Redis, the
Anthropic SDK and the mock provider over HTTP; nothing waits."""

from __future__ import annotations

import random

import pytest
from django.test import Client

from recovery.mock.testing import SplitClock
from sessions_app.agent.runner import generation_run
from sessions_app.errors import GenerationActive, InvalidInput, SessionNotFound
from sessions_app.models import Message
from sessions_app.selectors import events_after, session_snapshot
from sessions_app.services import prompt_submit
from sessions_app.services.prompts import answer_regenerate, prompt_edit
from sessions_app.services.versions import version_show
from tests.integration.core.test_event_log import apply_events

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_queue")]


@pytest.fixture
def clock():
    return SplitClock()


def run(generation, clock):
    generation_run(generation_id=generation.pk, clock=clock, rng=random.Random(7))


def say(chat, owner, text, clock):
    run(prompt_submit(session=chat, user=owner, text=text), clock)


def sent_history(mock_provider) -> list[tuple[str, str]]:
    """(role, text) of every message of the last request the provider received."""
    body = mock_provider.model_calls()[-1]["body"]
    history = []
    for message in body["messages"]:
        content = message["content"]
        texts = [content] if isinstance(content, str) else [b["text"] for b in content]
        history.append((message["role"], "".join(texts)))
    return history


def shown(chat, role: str = "") -> list[str]:
    """The transcript as a viewer sees it: the shown rows' texts (of one role), oldest first."""
    rows = Message.objects.filter(session=chat).order_by("id")
    if role:
        rows = rows.filter(role=role)
    return [m.full_text for m in rows if not m.metadata.get("off_path")]


def answers(chat) -> list[Message]:
    return list(Message.objects.filter(session=chat, role="assistant").order_by("id"))


def test_each_regenerated_answer_is_a_version_and_the_one_shown_is_the_one_sent(
    chat, owner, mock_provider, clock
):
    say(chat, owner, "tell me a joke", clock)
    run(answer_regenerate(session=chat, user=owner), clock)
    run(answer_regenerate(session=chat, user=owner), clock)
    first, second, third = answers(chat)
    assert [a.metadata["version"] for a in (first, second, third)] == [
        {"n": 1, "of": 3, "prev": None, "next": second.pk},
        {"n": 2, "of": 3, "prev": first.pk, "next": third.pk},
        {"n": 3, "of": 3, "prev": second.pk, "next": None},
    ]
    # Each regenerate asked again with the prompt alone: no earlier answer in its history.
    assert sent_history(mock_provider) == [("user", "tell me a joke")]

    version_show(session=chat, user=owner, message_id=first.pk)
    assert shown(chat) == ["tell me a joke", first.full_text]
    say(chat, owner, "another one", clock)

    assert sent_history(mock_provider) == [
        ("user", "tell me a joke"),
        ("assistant", first.full_text),
        ("user", "another one"),
    ]


def test_editing_an_earlier_prompt_branches_from_there_and_each_branch_is_sent_whole(
    chat, owner, mock_provider, clock
):
    say(chat, owner, "first question", clock)
    say(chat, owner, "second question", clock)
    say(chat, owner, "third question", clock)
    first_prompt = Message.objects.filter(session=chat, role="user").order_by("id").first()

    run(
        prompt_edit(session=chat, user=owner, text="first, rephrased", message_id=first_prompt.pk),
        clock,
    )

    assert sent_history(mock_provider) == [("user", "first, rephrased")]
    edited = Message.objects.get(session=chat, text="first, rephrased")
    assert edited.metadata["version"]["n"] == 2 and edited.metadata["version"]["of"] == 2
    assert len(shown(chat)) == 2  # the new branch: the edited prompt and its answer

    # Back to version 1: the whole original conversation, where it was last carried on.
    version_show(session=chat, user=owner, message_id=first_prompt.pk)
    assert shown(chat, role="user") == [
        "first question",
        "second question",
        "third question",
    ]
    say(chat, owner, "fourth question", clock)
    prompts_sent = [text for role, text in sent_history(mock_provider) if role == "user"]
    assert prompts_sent == [
        "first question",
        "second question",
        "third question",
        "fourth question",
    ]

    # And forward again: the edited branch, as it was left.
    version_show(session=chat, user=owner, message_id=edited.pk)
    say(chat, owner, "follow-up", clock)
    prompts_sent = [text for role, text in sent_history(mock_provider) if role == "user"]
    assert prompts_sent == ["first, rephrased", "follow-up"]


def test_a_viewer_applying_the_switch_events_converges_with_a_fresh_snapshot(chat, owner, clock):
    say(chat, owner, "hello", clock)
    run(answer_regenerate(session=chat, user=owner), clock)
    stale = session_snapshot(session=chat)

    version_show(session=chat, user=owner, message_id=answers(chat)[0].pk)

    events = events_after(session=chat, after_seq=stale["last_seq"])
    assert apply_events(stale, events)["messages"] == session_snapshot(session=chat)["messages"]


def test_a_switch_is_refused_while_a_turn_runs_and_for_a_row_that_has_no_versions(
    chat, owner, clock
):
    say(chat, owner, "hello", clock)
    run(answer_regenerate(session=chat, user=owner), clock)
    first = answers(chat)[0]
    prompt = Message.objects.get(session=chat, role="user")
    before = shown(chat)

    with pytest.raises(InvalidInput):
        version_show(session=chat, user=owner, message_id=prompt.pk)  # only one version
    with pytest.raises(InvalidInput):
        version_show(session=chat, user=owner, message_id=first.pk + 999)
    prompt_submit(session=chat, user=owner, text="still going")
    with pytest.raises(GenerationActive):
        version_show(session=chat, user=owner, message_id=first.pk)

    assert shown(chat)[: len(before)] == before


def test_editing_a_prompt_that_is_not_shown_is_refused_and_changes_nothing(chat, owner, clock):
    say(chat, owner, "hello", clock)
    old = Message.objects.get(session=chat, role="user")
    run(prompt_edit(session=chat, user=owner, text="hi"), clock)
    before = shown(chat)

    with pytest.raises(InvalidInput):
        prompt_edit(session=chat, user=owner, text="again", message_id=old.pk)  # hidden now

    assert shown(chat) == before


def test_the_switcher_view_answers_204_refuses_bad_input_and_hides_foreign_sessions(
    chat, owner, stranger, clock
):
    say(chat, owner, "hello", clock)
    run(answer_regenerate(session=chat, user=owner), clock)
    first = answers(chat)[0]
    client = Client()
    client.force_login(owner)
    url = f"/sessions/{chat.pk}/version/"

    bad = client.post(url, {"message": "abc"}, HTTP_HX_REQUEST="true")
    assert bad.status_code == 422 and "must be a message id" in bad.content.decode()
    assert client.post(url, {"message": first.pk}, HTTP_HX_REQUEST="true").status_code == 204
    assert shown(chat)[1] == first.full_text

    stranger_client = Client()
    stranger_client.force_login(stranger)
    assert stranger_client.post(url, {"message": first.pk}).status_code == 404
    with pytest.raises(SessionNotFound):
        version_show(session=chat, user=stranger, message_id=first.pk)
