"""Another session's Retry-After in real browsers: a desktop and a phone viewer of session Y while
session X of the same target was told by the provider to wait. Y made no failing call, so its
banner says whose wait it is (no attempt count, a countdown to sending, Cancel) and its answer is
not "recovered after a retry"; a wait past the cap hands Y back at once, as it handed X back.

The shared circuit is on here (it is off in the other browser modules, see conftest.py), with a
cap of 20 s on automatic waits so the scenario takes seconds. The 90 s hold of the last test
outlives it: keep it last in this module.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.retry_watch import page_seen, watch_page
from tests.e2e.test_live_session import open_session, send, wait_for_answer

pytestmark = pytest.mark.browser

CARD = "#recovery .recovery-card"


@pytest.fixture(scope="module")
def stack_settings() -> dict[str, str]:
    return {"KANDEV_CIRCUIT_ENABLED": "true", "KANDEV_RETRY_AFTER_CAP_S": "20"}


def told_to_wait(stack, page, marker: str) -> None:
    """Session X's prompt meets the provider's Retry-After."""
    open_session(page, stack.new_session(f"X {marker}"))
    send(page, f"[[mock:{marker}]] hello")
    page.wait_for_selector(f"#notice .notice, {CARD}")


def both_open(stack, desktop, phone, title: str) -> None:
    session_id = stack.new_session(title)
    for page in (desktop, phone):
        open_session(page, session_id)
        watch_page(page)


def test_a_session_held_by_anothers_retry_after_says_so_with_no_attempt_count(
    stack, desktop, phone
):
    # Y is open on the phone before X is told, so Y's prompt follows X's within the hold.
    y = stack.new_session("Y waits")
    open_session(phone, y)
    watch_page(phone)
    told_to_wait(stack, desktop, "overloaded:1:15")
    open_session(desktop, y)
    send(desktop, "tell me a joke")
    watch_page(desktop)
    for page in (desktop, phone):
        page.wait_for_selector("#notice .notice")
        assert page.is_visible("#notice .notice-cancel")
    for page in (desktop, phone):
        wait_for_answer(page)
        page.wait_for_selector("#notice .notice", state="detached")

    for page in (desktop, phone):
        seen = page_seen(page)
        assert seen["banners"] and set(seen["attempts"]) == {None}, seen  # no "attempt n of m"
        assert re.fullmatch(
            r"Waiting: the provider asked everyone using this target to wait 15 s \(another "
            r"session's request was refused\)\. Sending (in 0:\d\d|now…) Mock · mock-1",
            seen["banners"][0],
        ), seen["banners"]
        assert page.locator("#transcript .msg-recovered").count() == 0  # nothing was retried


def test_a_wait_past_the_cap_hands_the_held_session_back_at_once_as_it_did_the_other(
    stack, desktop, phone
):
    told_to_wait(stack, desktop, "overloaded:1:90")
    assert "asked to wait 1 min 30 s" in desktop.inner_text(CARD)
    both_open(stack, desktop, phone, "Y is handed back")
    send(desktop, "tell me a joke")

    for page in (desktop, phone):
        page.wait_for_selector(CARD)
        card = " ".join(page.inner_text(CARD).split())
        assert (
            "Not sent: the provider asked everyone using this target to wait 1 min 30 s "
            "(another session's request was refused), longer than the longest wait automatic "
            "retry takes (20 s)"
        ) in card, card
        assert "attempt" not in card
        assert set(page_seen(page)["attempts"]) == {None}  # it never waited silently
