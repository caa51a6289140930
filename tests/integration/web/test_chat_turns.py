"""Regenerate, edit and resend, and the one meaning of stopping a retry, against real Postgres,
Redis, the real SDK and the mock provider over HTTP. Scheduled attempts are run by calling the
task's service with an injected clock, as the worker would when the eta arrives; nothing waits."""

from __future__ import annotations

import random

import pytest
from django.core.management import call_command
from django.test import Client

from recovery import wording
from recovery.mock.testing import SplitClock
from recovery.model_call import TextPart
from sessions_app import event_types as ev
from sessions_app.agent.acp_context import acp_prompt_text
from sessions_app.agent.runner import generation_retry, generation_run
from sessions_app.agent.transcript import model_call_build
from sessions_app.errors import GenerationActive, InvalidInput, RetryWaiting, SessionNotFound
from sessions_app.ladder.models import RetryLoop, RetryNotice
from sessions_app.models import Message, PromptGeneration, Session, SessionEvent
from sessions_app.selectors import events_after, session_snapshot
from sessions_app.services import prompt_submit, session_stop
from sessions_app.services.prompts import (
    answer_regenerate,
    prompt_edit,
    retry_cancel,
    session_recover,
)
from sessions_app.services.targets import session_target_switch
from tests.integration.core.test_event_log import apply_events
from tests.support.factories import ProviderTargetFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_queue")]

State = PromptGeneration.State


@pytest.fixture
def clock():
    return SplitClock()


@pytest.fixture
def owner_client(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


def run(generation, clock):
    generation_run(generation_id=generation.pk, clock=clock, rng=random.Random(7))
    generation.refresh_from_db()
    return generation


def run_prompt(chat, owner, text, clock):
    return run(prompt_submit(session=chat, user=owner, text=text), clock)


def run_retry(loop, clock):
    loop.refresh_from_db()
    clock.wall.set(loop.next_attempt_at.timestamp())  # the eta arrived
    return generation_retry(
        loop_id=loop.pk, attempt=loop.attempt, clock=clock, rng=random.Random(7)
    )


def sent_texts(chat) -> list[tuple[str, str]]:
    """What the next model call would send: (role, text) of every text part, in order."""
    call = model_call_build(session_id=chat.pk, model="mock-1", tools=())
    return [
        (turn.role, part.text)
        for turn in call.turns
        for part in turn.parts
        if isinstance(part, TextPart)
    ]


def rows(chat) -> list[Message]:
    return list(Message.objects.filter(session=chat).order_by("id"))


def page(client, chat) -> str:
    return client.get(f"/sessions/{chat.pk}/").content.decode()


# ---- regenerate ---------------------------------------------------------------------------------


def test_regenerate_keeps_the_old_answer_as_a_version_and_never_sends_it_again(
    chat, owner, clock, owner_client
):
    run_prompt(chat, owner, "tell me a joke", clock)
    first_answer = Message.objects.get(session=chat, role="assistant")

    generation = answer_regenerate(session=chat, user=owner)

    assert (generation.mode, generation.state) == ("regenerate", State.QUEUED)
    first_answer.refresh_from_db()
    assert first_answer.metadata["off_path"] is True
    assert sent_texts(chat) == [("user", "tell me a joke")]  # the old answer is not history
    run(generation, clock)
    answers = [m for m in rows(chat) if m.role == "assistant"]
    assert [bool(m.metadata.get("off_path")) for m in answers] == [True, False]
    assert [m.metadata["version"]["n"] for m in answers] == [1, 2]
    html = page(owner_client, chat)
    # One answer shown, saying it is the second of two; the first kept, hidden.
    assert html.count('<span class="version-count">2 / 2</span>') == 1
    assert html.count('<span class="version-count">1 / 2</span>') == 1
    assert f'id="msg-{first_answer.pk}"' in html
    assert html.count('class="btn btn--quiet turn-action regenerate"') == 1


def test_regenerate_is_refused_while_a_turn_runs_and_before_any_prompt(
    chat, owner, clock, owner_client
):
    with pytest.raises(InvalidInput):
        answer_regenerate(session=chat, user=owner)
    prompt_submit(session=chat, user=owner, text="still going")

    with pytest.raises(GenerationActive):
        answer_regenerate(session=chat, user=owner)
    response = owner_client.post(f"/sessions/{chat.pk}/regenerate/", HTTP_HX_REQUEST="true")
    assert response.status_code == 409
    assert wording.STILL_WORKING in response.content.decode()
    assert PromptGeneration.objects.filter(session=chat).count() == 1  # nothing started


def test_regenerate_and_edit_answer_a_foreign_session_like_an_unknown_one(
    chat, owner, stranger, clock
):
    run_prompt(chat, owner, "mine", clock)
    with pytest.raises(SessionNotFound):
        answer_regenerate(session=chat, user=stranger)
    with pytest.raises(SessionNotFound):
        prompt_edit(session=chat, user=stranger, text="theirs")
    stranger_client = Client()
    stranger_client.force_login(stranger)
    for path in ("regenerate", "edit"):
        response = stranger_client.post(f"/sessions/{chat.pk}/{path}/", {"text": "x"})
        unknown = stranger_client.post(f"/sessions/{chat.pk + 999}/{path}/", {"text": "x"})
        assert response.status_code == unknown.status_code == 404
        assert response.content == unknown.content
    assert PromptGeneration.objects.filter(session=chat).count() == 1


def test_a_viewer_applying_the_regenerate_events_converges_with_a_fresh_snapshot(
    chat, owner, clock
):
    run_prompt(chat, owner, "hello", clock)
    stale = session_snapshot(session=chat)

    run(answer_regenerate(session=chat, user=owner), clock)

    events = events_after(session=chat, after_seq=stale["last_seq"])
    fresh = session_snapshot(session=chat)
    assert apply_events(stale, events)["messages"] == fresh["messages"]
    updated = [e for e in events if e["event"] == ev.MESSAGE_UPDATED]
    assert updated[0]["payload"]["message"]["metadata"]["off_path"] is True


# ---- edit and resend ----------------------------------------------------------------------------


def test_edit_sends_the_new_prompt_and_keeps_the_old_prompt_and_answer_as_a_version(
    chat, owner, clock, owner_client
):
    run_prompt(chat, owner, "first question", clock)
    run_prompt(chat, owner, "secnd question", clock)

    generation = prompt_edit(session=chat, user=owner, text="second question")

    assert generation.mode == "edit"
    shown = [(m.role, m.text[:14], bool(m.metadata.get("off_path"))) for m in rows(chat)]
    assert shown[2:4] == [("user", "secnd question", True), ("assistant", shown[3][1], True)]
    assert shown[4] == ("user", "second questio", False)
    run(generation, clock)
    sent = [text for role, text in sent_texts(chat) if role == "user"]
    assert sent == ["first question", "second question"]  # the old version is gone from history
    # An ACP agent is told the same conversation.
    acp = acp_prompt_text(messages=[m for m in rows(chat) if m.role in ("user", "assistant")])
    assert acp.prompt == "second question" and "secnd" not in (acp.context or "")
    html = page(owner_client, chat)
    assert html.count('<span class="version-count">2 / 2</span>') == 1
    # Every shown prompt can be edited; the hidden version carries no buttons.
    assert html.count('class="btn btn--quiet turn-action edit-prompt"') == 2


def test_an_empty_edit_is_refused_and_changes_nothing(chat, owner, clock, owner_client):
    run_prompt(chat, owner, "keep me", clock)
    before = [(m.pk, m.metadata) for m in rows(chat)]

    with pytest.raises(InvalidInput):
        prompt_edit(session=chat, user=owner, text="   ")
    response = owner_client.post(f"/sessions/{chat.pk}/edit/", {"text": ""}, HTTP_HX_REQUEST="true")

    assert response.status_code == 422
    assert "must not be empty" in response.content.decode()
    assert [(m.pk, m.metadata) for m in rows(chat)] == before


def test_edit_is_refused_while_a_turn_runs(chat, owner, owner_client):
    prompt_submit(session=chat, user=owner, text="running")
    response = owner_client.post(
        f"/sessions/{chat.pk}/edit/", {"text": "changed"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 409
    assert wording.STILL_WORKING in response.content.decode()
    assert [m.text for m in rows(chat)] == ["running"]


# ---- one meaning for stopping a retry -----------------------------------------------------------


def test_stop_during_a_wait_does_exactly_what_cancel_does(mock_provider, owner, clock):
    outcomes = []
    for stop in (
        lambda chat: session_stop(session=chat, user=owner),
        lambda chat: retry_cancel(session_id=chat.pk, user=owner),
    ):
        served = ProviderTargetFactory(name=f"Mock {len(outcomes)}", base_url=mock_provider.url)
        chat = Session.objects.create(
            task=owner.tasks.create(title="t"), owner=owner, target=served, title="Stop"
        )
        generation = run_prompt(chat, owner, "/overloaded:9 hi", clock)
        assert generation.state == State.WAITING_RETRY
        stop(chat)
        generation.refresh_from_db()
        chat.refresh_from_db()
        snapshot = session_snapshot(session=chat)
        outcomes.append(
            (
                generation.state,
                generation.error_code,
                chat.state,
                snapshot["recovery_actions"],
                RetryLoop.objects.get(generation=generation).state,
                RetryNotice.objects.live().filter(session=chat).count(),
            )
        )
    assert (
        outcomes[0]
        == outcomes[1]
        == (State.FAILED, "cancelled", "needs_attention", ["resume", "fresh"], "cancelled", 0)
    )


def test_a_new_prompt_during_a_wait_is_refused_and_the_retry_stays_scheduled(
    chat, owner, clock, owner_client, mock_provider
):
    waiting = run_prompt(chat, owner, "/overloaded:1 hi", clock)

    with pytest.raises(RetryWaiting):
        prompt_submit(session=chat, user=owner, text="never mind")
    response = owner_client.post(
        f"/sessions/{chat.pk}/prompts/", {"text": "never mind"}, HTTP_HX_REQUEST="true"
    )

    assert response.status_code == 409
    assert wording.RETRY_PENDING in response.content.decode()
    waiting.refresh_from_db()
    assert waiting.state == State.WAITING_RETRY
    assert RetryNotice.objects.get(session=chat).attempt == 1  # the banner did not restart
    assert [m.text for m in rows(chat) if m.role == "user"] == ["/overloaded:1 hi"]
    # The retry still runs when its time comes, and then a new prompt is welcome.
    run_retry(RetryLoop.objects.get(generation=waiting), clock)
    waiting.refresh_from_db()
    assert waiting.state == State.SUCCEEDED
    assert prompt_submit(session=chat, user=owner, text="never mind").state == State.QUEUED


def test_after_cancelling_the_wait_a_new_prompt_is_accepted(chat, owner, clock):
    run_prompt(chat, owner, "/overloaded:9 hi", clock)
    session_stop(session=chat, user=owner)
    assert prompt_submit(session=chat, user=owner, text="something else").state == State.QUEUED


# ---- the transcript says what happened ----------------------------------------------------------


def test_a_recovered_answer_carries_a_quiet_line_saying_how(chat, owner, clock, owner_client):
    generation = run_prompt(chat, owner, "/overloaded:2 hi", clock)
    loop = RetryLoop.objects.get(generation=generation)
    run_retry(loop, clock)
    run_retry(loop, clock)

    answer = Message.objects.get(session=chat, role="assistant")
    assert answer.metadata["recovered"] == {"retries": 2, "code": "provider_overloaded"}
    assert "Recovered after 2 retries (provider overloaded)." in page(owner_client, chat)


def test_an_answer_without_retries_carries_no_recovered_line(chat, owner, clock, owner_client):
    run_prompt(chat, owner, "hi", clock)
    assert "Recovered after" not in page(owner_client, chat)
    assert "recovered" not in Message.objects.get(session=chat, role="assistant").metadata


def test_start_fresh_draws_a_new_context_divider_above_the_resent_prompt(
    chat, owner, clock, owner_client
):
    run_prompt(chat, owner, "/auth hello", clock)
    run(session_recover(session=chat, user=owner, action="fresh"), clock)

    html = page(owner_client, chat)
    assert html.count(wording.NEW_CONTEXT) == 1
    resent = Message.objects.filter(session=chat, role="user").last()
    divider_at = html.index(wording.NEW_CONTEXT)
    assert html.rindex(f'id="msg-{resent.pk}"', 0, divider_at) >= 0  # inside the resent row


def test_resume_labels_the_partial_answer_it_supersedes(chat, owner, clock, owner_client):
    run_prompt(chat, owner, "/overloaded-after-text:1 hi", clock)
    chat.refresh_from_db()

    run(session_recover(session=chat, user=owner, action="resume"), clock)

    partial, full = Message.objects.filter(session=chat, role="assistant").order_by("id")
    assert (partial.incomplete, partial.metadata.get("replaced")) == (True, "resume")
    assert full.metadata.get("replaced") is None
    html = page(owner_client, chat)
    assert html.count(wording.SUPERSEDED_BY_RESUME) == 1
    assert '<details class="replaced">' not in html  # a partial stays open, only flagged


# ---- switching target from the card -------------------------------------------------------------


def test_a_card_offers_the_other_targets_and_a_switch_resumes_on_the_new_one(
    chat, owner, clock, owner_client, mock_provider
):
    original = chat.target
    backup = ProviderTargetFactory(name="Backup", model="mock-backup", base_url=mock_provider.url)
    run_prompt(chat, owner, "/auth hello", clock)
    chat.refresh_from_db()
    assert chat.state == Session.State.NEEDS_ATTENTION
    assert session_snapshot(session=chat)["switch_targets"] == [{"id": backup.pk, "name": "Backup"}]
    assert f'<option value="{backup.pk}">Backup</option>' in page(owner_client, chat)

    response = owner_client.post(
        f"/sessions/{chat.pk}/switch-target/", {"target": backup.pk}, HTTP_HX_REQUEST="true"
    )

    assert response.status_code == 204
    chat.refresh_from_db()
    assert chat.target == backup and chat.state == Session.State.NEEDS_ATTENTION
    # Every viewer's card now offers the way back, and Resume runs on the new target.
    pushed = SessionEvent.objects.filter(session=chat, type=ev.SESSION_UPDATED).last().payload
    assert pushed["switch_targets"] == [{"id": original.pk, "name": "Mock"}]
    assert pushed["recovery_actions"] == ["resume", "fresh"]
    run(session_recover(session=chat, user=owner, action="resume"), clock)
    assert mock_provider.requests()[-1]["model"] == "mock-backup"


@pytest.mark.parametrize("posted", ["", "abc", "999999"])
def test_a_switch_to_a_target_the_card_does_not_offer_is_refused(
    chat, owner, clock, owner_client, posted
):
    run_prompt(chat, owner, "/auth hello", clock)
    chat.refresh_from_db()
    before = chat.target_id

    with pytest.raises(InvalidInput):
        session_target_switch(session=chat, user=owner, target_id=posted)
    response = owner_client.post(
        f"/sessions/{chat.pk}/switch-target/", {"target": posted}, HTTP_HX_REQUEST="true"
    )

    assert response.status_code == 422
    assert "Cannot switch" in response.content.decode()
    chat.refresh_from_db()
    assert chat.target_id == before


def test_a_card_offers_no_switch_when_there_is_no_other_target(chat, owner, clock, owner_client):
    run_prompt(chat, owner, "/auth hello", clock)
    html = page(owner_client, chat)
    assert 'class="recovery-switch"' not in html
    assert "recovery-resume" in html


# ---- the JSON API -------------------------------------------------------------------------------


def test_the_api_regenerates_edits_and_refuses_a_prompt_while_a_retry_waits(
    chat, owner, clock, capsys
):
    call_command("create_api_token", username="owner")
    api = Client(headers={"authorization": f"Bearer {capsys.readouterr().out.strip()}"})
    base = f"/api/v1/sessions/{chat.pk}"
    run_prompt(chat, owner, "/overloaded:1 hi", clock)

    waiting = api.post(f"{base}/prompts", {"text": "other"}, content_type="application/json")
    assert waiting.status_code == 409 and waiting.json()["detail"] == wording.RETRY_PENDING
    assert api.post(f"{base}/regenerate").status_code == 409
    run_retry(RetryLoop.objects.get(session=chat), clock)

    empty = api.post(f"{base}/edit", {"text": ""}, content_type="application/json")
    assert empty.status_code == 422
    edited = api.post(f"{base}/edit", {"text": "hello"}, content_type="application/json")
    assert edited.status_code == 202
    assert Message.objects.filter(session=chat, role="user").last().text == "hello"
    run(PromptGeneration.objects.get(session=chat, number=edited.json()["generation"]), clock)
    regenerated = api.post(f"{base}/regenerate")
    assert regenerated.status_code == 202
    generation = PromptGeneration.objects.get(session=chat, number=regenerated.json()["generation"])
    assert run(generation, clock).state == State.SUCCEEDED
