"""Failure cards in plain words: the headline says what happened and what to do, the technical
detail sits behind a disclosure, and the offered actions follow the failure's classification."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from recovery import wording
from recovery.replay import ReplayReason
from recovery.taxonomy import CODE_POLICY, Code, Klass
from sessions_app import event_types as ev
from sessions_app.agent.outcome import handed_back_outcome
from sessions_app.frames import event_html
from sessions_app.models import PromptGeneration, Session
from sessions_app.selectors import session_snapshot
from sessions_app.services import generation_end, prompt_submit

pytestmark = pytest.mark.django_db

STREAM_LOST = (
    "connection lost mid-stream: RemoteProtocolError: peer closed connection without sending "
    "complete message body (incomplete chunked read)"
)
BAD_REQUEST = "HTTP 400 invalid_request_error: messages.1.content: Input should be a valid list"


@pytest.fixture
def owner_client(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


def fail(owner, session: Session, *, code: Code, headline: str, detail: str) -> PromptGeneration:
    generation = prompt_submit(session=session, user=owner, text="hello")
    # A worker claimed it and the run failed: only a running generation can fail.
    PromptGeneration.objects.filter(pk=generation.pk).update(state=PromptGeneration.State.RUNNING)
    failure = handed_back_outcome(code=str(code), detail=wording.with_detail(headline, detail))
    assert generation_end(
        generation=generation,
        state=PromptGeneration.State.FAILED,
        error_code=failure.code,
        error_message=failure.message,
    )
    return generation


def card(page: str) -> str:
    return re.search(r'<section class="card recovery-card".*?</section>', page, flags=re.S).group(0)


def test_a_card_splits_into_headline_and_detail_at_the_marker_only():
    headline = wording.post_exposure_message(Code.TRUNCATED_STREAM)
    assert wording.split_detail(wording.with_detail(headline, STREAM_LOST)) == (
        headline,
        STREAM_LOST,
    )
    assert wording.split_detail(headline) == (headline, "")
    # A detail that itself says "Details:" stays whole: only the first marker splits.
    nested = wording.with_detail(headline, f"outer{wording.DETAIL_MARKER}inner")
    assert wording.split_detail(nested) == (headline, f"outer{wording.DETAIL_MARKER}inner")


@pytest.mark.parametrize(
    "sentence",
    [
        wording.post_exposure_message(Code.TRUNCATED_STREAM),
        wording.hard_message(Code.INVALID_REQUEST, resets_in_s=None),
        wording.unclassified_message(),
        wording.replay_refused_card(
            Code.AGENT_TRANSPORT_LOST, reason=ReplayReason.OUTPUT_SEEN, partial=True, detail=""
        ),
        wording.WORKER_LOST,
        wording.RETRY_CANCELLED,
    ],
)
def test_no_card_sentence_contains_the_detail_marker(sentence):
    assert "\n" not in sentence


def test_a_lost_stream_card_keeps_the_exception_out_of_the_headline(owner_client, owner, session):
    headline = wording.post_exposure_message(Code.TRUNCATED_STREAM)
    fail(owner, session, code=Code.TRUNCATED_STREAM, headline=headline, detail=STREAM_LOST)
    html = card(owner_client.get(f"/sessions/{session.pk}/").content.decode())

    explanation = re.search(r'<p class="recovery-explanation">(.*?)</p>', html).group(1)
    assert explanation == headline.replace("'", "&#x27;")
    assert "RemoteProtocolError" not in explanation and "Details:" not in explanation
    detail = re.search(r'<details class="recovery-detail">(.*?)</details>', html).group(1)
    assert detail == f"<summary>Technical details</summary><p>{STREAM_LOST}</p>"
    # Resume is the primary action for a failure that may not repeat.
    buttons = re.findall(r'<button type="button" class="([^"]+)"', html)
    assert buttons == ["btn btn--primary recovery-resume", "btn recovery-fresh"]


def test_a_hard_bad_request_card_offers_start_fresh_and_no_resume(owner_client, owner, session):
    headline = wording.hard_message(Code.INVALID_REQUEST, resets_in_s=None)
    assert "resuming would fail the same way" in headline
    fail(owner, session, code=Code.INVALID_REQUEST, headline=headline, detail=BAD_REQUEST)

    snapshot = session_snapshot(session=session)
    assert snapshot["recovery_actions"] == ["fresh"]
    html = card(owner_client.get(f"/sessions/{session.pk}/").content.decode())
    assert "recovery-resume" not in html and "Resume re-runs" not in html
    assert '<button type="button" class="btn btn--primary recovery-fresh"' in html

    # The pushed session.updated says the same as the page.
    event = session.events.filter(type=ev.SESSION_UPDATED).order_by("-seq").first()
    assert event.payload["recovery_actions"] == ["fresh"]
    pushed = event_html(session_id=session.pk, event=event.type, payload=event.payload, now_ms=1)
    assert "recovery-resume" not in pushed
    assert '<button type="button" class="btn btn--primary recovery-fresh"' in pushed
    assert f"<p>{BAD_REQUEST}</p>" in pushed and "HTTP 400" not in card(pushed).split("<details")[0]


def test_an_unknown_code_keeps_both_actions_resume_first():
    assert wording.recovery_actions("") == ("resume", "fresh")
    assert wording.recovery_actions("no_such_code") == ("resume", "fresh")
    assert wording.recovery_actions(str(Code.INVALID_REQUEST)) == ("fresh",)


REPEATS = ("would fail the same way", "would not fix")
# The policy words a card with hard_message only for hard failures (recovery/policy.py).
HARD_CODES = [code for code, policy in CODE_POLICY.items() if policy.klass is Klass.HARD]


@pytest.mark.parametrize("code", HARD_CODES)
def test_no_card_offers_resume_first_for_a_failure_it_says_will_repeat(code):
    card_text = wording.hard_message(code, resets_in_s=None)
    says_it_repeats = any(phrase in card_text for phrase in REPEATS)
    actions = wording.recovery_actions(str(code))
    assert (actions[0] == "resume") is not says_it_repeats, (code, card_text, actions)
