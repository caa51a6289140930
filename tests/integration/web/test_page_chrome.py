"""The session page's chrome: which regions are live, the composer's hint, the favicon, and the
session.updated frame that clears a stale composer error once the session is idle again."""

from __future__ import annotations

import re

import pytest
from django.templatetags.static import static
from django.test import Client

from sessions_app import event_types as ev
from sessions_app.frames import event_html
from sessions_app.models import Session

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner_client(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


def live_regions(page: str) -> list[str]:
    """Each element a screen reader would announce changes of (aria-live, or a live role), by its
    id or else its first class."""
    found = []
    for tag in re.findall(r"<[a-z]+\b[^>]*>", page):
        if re.search(r'\baria-live="(polite|assertive)"|\brole="(status|alert|log)"', tag):
            name = re.search(r'\bid="([^"]+)"', tag) or re.search(r'\bclass="([^" ]+)', tag)
            found.append(name.group(1))
    return found


def test_only_the_banner_and_the_status_regions_are_live_not_the_transcript(owner_client, session):
    page = owner_client.get(f"/sessions/{session.pk}/").content.decode()
    # The retry banner, the session's state badge, the connection line and the composer's error.
    assert sorted(live_regions(page)) == ["composer-error", "connection", "notice", "state-region"]
    transcript = re.search(r'<div id="transcript"[^>]*>', page).group(0)
    assert "aria-live" not in transcript and 'role="log"' not in transcript
    recovery = re.search(r'<div id="recovery"[^>]*>', page).group(0)
    assert "aria-live" not in recovery and "role=" not in recovery


def test_the_composer_hints_its_keys_and_every_button_has_a_name(owner_client, session):
    page = owner_client.get(f"/sessions/{session.pk}/").content.decode()
    assert 'aria-describedby="composer-hint"' in page
    assert "<kbd>Shift</kbd>+<kbd>Enter</kbd> for a new line" in page
    for button in re.findall(r"<button\b[^>]*>.*?</button>", page, flags=re.S):
        name = re.sub(r"<[^>]+>", "", button).strip() or re.search(r'aria-label="([^"]+)"', button)
        assert name, button


def test_the_favicon_is_linked_and_favicon_ico_is_not_a_404(owner_client, client, session):
    page = owner_client.get(f"/sessions/{session.pk}/").content.decode()
    icon = static("favicon.svg")
    assert re.fullmatch(r"/static/favicon\.[0-9a-f]{12}\.svg", icon)  # the manifest's hashed name
    assert f'<link rel="icon" href="{icon}"' in page
    response = client.get("/favicon.ico")
    # Not permanent: the next deploy's icon has another name.
    assert response.status_code == 302 and response["Location"] == icon


@pytest.mark.parametrize(
    ("state", "cleared"),
    [
        (Session.State.IDLE, True),
        (Session.State.NEEDS_ATTENTION, True),
        (Session.State.RUNNING, False),
        (Session.State.WAITING_RETRY, False),
    ],
)
def test_a_stale_composer_error_is_cleared_when_the_session_stops_working(session, state, cleared):
    html = event_html(
        session_id=session.pk,
        event=ev.SESSION_UPDATED,
        payload={"state": state, "recovery_actions": []},
        now_ms=1,
    )
    clear = '<p id="composer-error" class="form-error" role="alert" hx-swap-oob="true"></p>'
    assert (clear in html) is cleared
