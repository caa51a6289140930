"""Start fresh and put the workspace back, in a real Chromium against the real stack: the mock
ACP agent writes a file and fails with a 529; every viewer's card offers both ways; the phone
opens the confirmation and can read the list; the desktop confirms; the file is gone, both cards
go away and the fresh turn answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import AcpPlaces
from tests.e2e.test_acp_session import acp_session, wait_for_complete_answer
from tests.e2e.test_live_session import open_session, send

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

NEW_FILE = "docs/a-rather-long-folder-name-for-a-phone/and-a-long-file-name-to-wrap.md"


@pytest.fixture(scope="module")
def work(acp_places: AcpPlaces) -> Path:
    return acp_places.work


@pytest.fixture(scope="module")
def stack_settings(acp_places: AcpPlaces) -> dict[str, str]:
    """The stack's worker and every agent it starts see these (the mock agent's counters too)."""
    return acp_places.stack_settings


def test_start_fresh_shows_what_it_puts_back_and_puts_it_back(stack, desktop, phone, work):
    session_id = acp_session(stack, "Fresh restore")
    workspace = work / f"session-{session_id}"
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "notes.md").write_text("the person's notes\n")
    for page in (desktop, phone):
        open_session(page, session_id)

    send(desktop, f"/write-then-fail:1 {NEW_FILE} draft it")

    restore_link = "#recovery a.recovery-fresh-restore"
    for page in (desktop, phone):
        page.wait_for_selector(restore_link, timeout=90_000)
        assert page.inner_text(restore_link) == "Start fresh and put the workspace back"
        assert page.inner_text("#recovery .recovery-fresh") == "Start fresh, keep the files"
        assert "This turn changed 1 file." in page.inner_text("#recovery")
    assert (workspace / NEW_FILE).exists()

    phone.click(restore_link)
    phone.wait_for_selector("#recovery .recovery-confirm")
    listing = phone.inner_text("#recovery .recovery-confirm")
    assert "Removed: 1 file new since the turn started" in listing
    assert NEW_FILE in listing
    # Readable on the phone: the long path wraps inside the card, nothing scrolls sideways.
    path_box = phone.locator(".restore-files code").bounding_box()
    card_box = phone.locator(".recovery-confirm").bounding_box()
    assert path_box is not None and card_box is not None
    assert path_box["x"] + path_box["width"] <= card_box["x"] + card_box["width"]
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    phone.screenshot(path="/tmp/kandev-fresh-confirm-phone.png", full_page=True)
    phone.click("#recovery .recovery-confirm-back")  # Back: the card again, nothing changed
    phone.wait_for_selector(restore_link)
    assert (workspace / NEW_FILE).exists()

    desktop.click(restore_link)
    desktop.wait_for_selector("#recovery .recovery-confirm-restore")
    desktop.screenshot(path="/tmp/kandev-fresh-confirm-desktop.png")
    desktop.click("#recovery .recovery-confirm-restore")

    for page in (desktop, phone):
        page.wait_for_function(
            "() => !document.querySelector('#recovery .recovery-card')", timeout=60_000
        )
        wait_for_complete_answer(page, "Mock agent reply to:")
    assert not (workspace / "docs").exists()
    assert (workspace / "notes.md").read_text() == "the person's notes\n"
