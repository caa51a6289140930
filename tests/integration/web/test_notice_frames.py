"""How the retry banner and the recovery card are rendered: on the page, in pushed frames, in a
replay and in a snapshot."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from sessions_app import event_types as ev
from sessions_app.frames import event_html, event_run_frame, snapshot_frame
from sessions_app.selectors import events_after, session_snapshot
from sessions_app.services.lifecycle.retry_wait import notices_retire
from sessions_app.templatetags.notices import countdown_text
from tests.integration.web.retry_state import RETRY_AT_S, waiting_session
from tests.support.session_states import session_walk_to

RETRY_AT_MS = int(RETRY_AT_S * 1000)
NINE_SECONDS_BEFORE = RETRY_AT_MS - 9_000


def notice_payload(**overrides) -> dict:
    notice = {
        "id": 7,
        "reason": "Provider overloaded",
        "code": "provider_overloaded",
        "provider": "Mock",
        "model": "mock-1",
        "attempt": 2,
        "max_attempts": 5,
        "retry_at": "2027-01-15T08:00:09+00:00",
        "retry_at_ms": RETRY_AT_MS,
        "switched_target": "",
    }
    return {"notice": {**notice, **overrides}}


def visible_text(html: str) -> str:
    without_hidden = re.sub(r'<span class="visually-hidden">[^<]*</span>', "", html)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", without_hidden)).strip()


@pytest.mark.parametrize(
    ("remaining_ms", "text"),
    [
        (9_000, "Retrying in 0:09"),
        (8_001, "Retrying in 0:09"),
        (1, "Retrying in 0:01"),
        (61_000, "Retrying in 1:01"),
        (0, "Retrying now…"),
        (-2_500, "Retrying now…"),
    ],
)
def test_the_countdown_counts_whole_seconds_up_and_says_retrying_now_at_zero(remaining_ms, text):
    assert countdown_text(remaining_ms=remaining_ms) == text


def test_a_pushed_notice_reads_as_one_calm_sentence_with_its_own_clock(db):
    html = event_html(
        session_id=3,
        event=ev.NOTICE_UPSERTED,
        payload=notice_payload(),
        now_ms=NINE_SECONDS_BEFORE,
    )
    assert visible_text(html).startswith(
        "Provider overloaded. Retrying in 0:09 (attempt 2 of 5) Mock · mock-1 Cancel"
    )
    assert 'id="notice" class="notice-region" role="status" aria-live="polite"' in html
    assert 'hx-swap-oob="innerHTML"' in html and 'id="notice-7"' in html
    assert f'data-retry-at-ms="{RETRY_AT_MS}"' in html
    assert f'data-server-now-ms="{NINE_SECONDS_BEFORE}"' in html
    assert 'hx-post="/sessions/3/cancel-retry/"' in html


def test_a_failover_notice_says_which_target_it_switched_to(db):
    html = event_html(
        session_id=3,
        event=ev.NOTICE_UPSERTED,
        payload=notice_payload(switched_target="Backup"),
        now_ms=NINE_SECONDS_BEFORE,
    )
    assert "Mock · mock-1 Switched to Backup" in visible_text(html)


def test_notice_text_from_the_provider_is_escaped(db):
    payload = notice_payload(
        reason="<script>alert(1)</script>",
        provider="<b>Evil</b>",
        model='m" onclick="x',
        switched_target="<i>B</i>",
    )
    html = event_html(session_id=3, event=ev.NOTICE_UPSERTED, payload=payload, now_ms=0)
    assert "<script>" not in html and "<b>" not in html and "<i>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;Evil&lt;/b&gt;" in html and "&lt;i&gt;B&lt;/i&gt;" in html
    assert 'onclick="x' not in html


def test_a_notice_deletion_removes_exactly_the_notices_it_names(db):
    html = event_html(session_id=3, event=ev.NOTICE_DELETED, payload={"ids": [7, 9]})
    assert html == (
        '<div id="notice-7" hx-swap-oob="delete"></div>'
        '<div id="notice-9" hx-swap-oob="delete"></div>'
    )


def test_the_recovery_card_explains_and_offers_resume_and_start_fresh(db):
    payload = {
        "state": "needs_attention",
        "recovery_actions": ["resume", "fresh"],
        "explanation": "The provider remained overloaded after 5 attempts <sic>.",
    }
    html = event_html(session_id=3, event=ev.SESSION_UPDATED, payload=payload)
    assert "The provider remained overloaded after 5 attempts &lt;sic&gt;." in html
    assert ">Resume</button>" in html and ">Start fresh</button>" in html
    assert html.count('hx-post="/sessions/3/recover/"') == 2
    assert 'class="badge badge--needs_attention"' in html


def test_the_recovery_card_goes_away_once_the_session_runs_again(db):
    html = event_html(
        session_id=3, event=ev.SESSION_UPDATED, payload={"state": "running", "recovery_actions": []}
    )
    card = re.search(r'<div id="recovery"[^>]*>(.*?)</div>', html, re.DOTALL)
    assert card is not None and card.group(1) == ""


@pytest.mark.django_db
def test_a_replay_and_a_snapshot_agree_that_a_retired_banner_is_gone(session):
    stale_seq = session.last_seq
    notice = waiting_session(session=session)
    mid_retry = session_snapshot(session=session)
    assert 'id="notice-' in snapshot_frame(snapshot=mid_retry)
    notices_retire(session_id=session.pk, reason="succeeded")

    replay = event_run_frame(
        session_id=session.pk, events=events_after(session=session, after_seq=stale_seq)
    )
    shown_at = replay.index(f'<div id="notice-{notice.pk}" class="notice"')
    deleted_at = replay.index(f'<div id="notice-{notice.pk}" hx-swap-oob="delete">')
    assert shown_at < deleted_at  # a late viewer sees it come and go, ending without it
    fresh = snapshot_frame(snapshot=session_snapshot(session=session))
    assert re.search(r'<div id="notice" [^>]*hx-swap-oob="innerHTML"></div>', fresh)


@pytest.mark.django_db
def test_the_page_after_reload_shows_the_banner_while_waiting_and_the_card_after(owner, session):
    client = Client()
    client.force_login(owner)
    waiting_session(session=session)
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert "Provider overloaded." in page and "(attempt 2 of 5)" in page
    assert re.search(r'data-server-now-ms="\d{13}"', page)
    assert "recovery-card" not in page

    notices_retire(session_id=session.pk, reason="succeeded")
    session_walk_to(
        session=session,
        state="needs_attention",
        recovery_actions=("resume", "fresh"),
        explanation="Automatic retry was cancelled.",
    )
    session.generations.update(state="failed", error_message="Automatic retry was cancelled.")
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert 'class="notice"' not in page
    assert "Automatic retry was cancelled." in page and ">Start fresh</button>" in page
