"""The visible retry ladder in real browsers: a desktop viewer and a phone viewer (390x844, touch)
of one session, against the real stack (Daphne, a Celery worker, the mock provider), with retry
waits of one second (tests/e2e/conftest.py)."""

from __future__ import annotations

import re

import pytest

from devtools.eventually import eventually
from tests.e2e.retry_watch import ServerWatch, mock_requests, page_seen, watch_page
from tests.e2e.test_live_session import assert_fits_a_phone, open_session, send, wait_for_answer

pytestmark = pytest.mark.browser

RETRYING_NOW = "Retrying now…"
CARD = "#recovery .recovery-card"


@pytest.fixture(scope="module")
def api_token(stack) -> str:
    from tests.e2e.conftest import USERNAME

    return stack.manage("create_api_token", "--username", USERNAME).strip().splitlines()[-1]


def both_open(stack, desktop, phone, title: str) -> int:
    session_id = stack.new_session(title)
    for page in (desktop, phone):
        open_session(page, session_id)
        watch_page(page)
    return session_id


def banner_text(page) -> str:
    return " ".join(page.inner_text("#notice .notice").split())


def test_an_overload_shows_one_banner_that_advances_and_leaves_on_success(
    stack, desktop, phone, api_token
):
    session_id = both_open(stack, desktop, phone, "Overloaded twice")
    with ServerWatch(stack.base_url, stack.database_url, api_token, session_id) as server:
        send(desktop, "/overloaded:2 hi")
        for page in (desktop, phone):
            wait_for_answer(page)
            page.wait_for_selector("#notice .notice", state="detached")
        eventually(
            lambda: server.samples and server.samples[-1].state == "idle",
            timeout=10,
            what="the API to report the session idle",
        )

    for page in (desktop, phone):
        seen = page_seen(page)
        # Each screen showed the one banner, moving from attempt 1 to 2, then none (success).
        assert seen["attempts"] == [None, "(attempt 1 of 5)", "(attempt 2 of 5)", None], seen
        assert re.fullmatch(
            r"Provider overloaded\. Retrying (in 0:0\d|now…) \(attempt 1 of 5\) Mock · mock-1",
            seen["banners"][0],
        ), seen["banners"]
        assert seen["red"] == []
    waiting = [s for s in server.samples if s.state == "waiting_retry"]
    assert waiting, "the poll never caught the session waiting"
    assert all(s.notice_rows <= 1 for s in server.samples)
    assert all(s.notice_rows == 1 and s.notice_attempt in (1, 2) for s in waiting), waiting
    final = server.samples[-1]
    assert (final.state, final.notice_attempt, final.notice_rows) == ("idle", None, 0)


def test_cancel_on_one_viewer_offers_resume_and_start_fresh_to_both(
    stack, desktop, phone, api_token
):
    session_id = both_open(stack, desktop, phone, "Cancel the retry")
    send(desktop, "/overloaded:99 hi")
    for page in (desktop, phone):
        page.wait_for_selector("#notice .notice")
    desktop.screenshot(path="/tmp/kandev-desktop-banner.png")
    phone.screenshot(path="/tmp/kandev-phone-banner.png")
    assert_fits_a_phone(phone)

    phone.tap("#notice .notice-cancel")
    for page in (desktop, phone):
        page.wait_for_selector(f"{CARD} .recovery-resume")
        page.wait_for_selector(f"{CARD} .recovery-fresh")
        page.wait_for_selector("#notice .notice", state="detached")
        assert "cancelled" in page.inner_text(f"{CARD} .recovery-explanation")
    desktop.reload()
    desktop.wait_for_selector(f"{CARD} .recovery-resume")
    assert desktop.locator("#notice .notice").count() == 0
    phone.screenshot(path="/tmp/kandev-phone-card.png")
    assert_fits_a_phone(phone)

    requests_before = len(mock_requests(stack.mock_url))
    open_session(desktop, session_id)
    desktop.click(f"{CARD} .recovery-resume")
    for page in (desktop, phone):  # the re-run meets the same overload: a new loop, a new banner
        page.wait_for_selector("#notice .notice-attempt:has-text('attempt 1 of 5')")
        assert page.locator(CARD).count() == 0
    assert len(mock_requests(stack.mock_url)) > requests_before
    desktop.click("#notice .notice-cancel")  # leave the worker idle for the next test
    phone.wait_for_selector(f"{CARD} .recovery-resume")


def test_exhaustion_ends_in_the_recovery_card_with_a_plain_explanation(stack, desktop, phone):
    both_open(stack, desktop, phone, "Exhaustion")
    send(phone, "/overloaded:99 give up eventually")
    for page in (desktop, phone):
        page.wait_for_selector(f"{CARD} .recovery-resume", timeout=60_000)
        attempts = [f"(attempt {n} of 5)" for n in range(1, 6)]
        assert page_seen(page)["attempts"] == [None, *attempts, None]
        explanation = page.inner_text(f"{CARD} .recovery-explanation")
        assert "after 5 attempts" in explanation, explanation
        assert page.locator("#notice .notice").count() == 0
        assert page.inner_text("#session-state") == "Needs attention"
        assert page_seen(page)["red"] == []
    phone.reload()
    phone.wait_for_selector(f"{CARD} .recovery-fresh")
    assert "after 5 attempts" in phone.inner_text(f"{CARD} .recovery-explanation")
    assert_fits_a_phone(phone)
    phone.screenshot(path="/tmp/kandev-phone-exhausted.png")


def test_a_429_retry_waits_at_least_as_long_as_its_retry_after(stack, desktop, phone):
    both_open(stack, desktop, phone, "Retry-After")
    seen_before = len(mock_requests(stack.mock_url))
    send(desktop, "/rate-limited:1:3 respect my limit")
    for page in (desktop, phone):
        wait_for_answer(page)
        assert page_seen(page)["banners"][0].startswith("Rate limited. Retrying in 0:0")

    def both_calls() -> list[dict]:
        calls = mock_requests(stack.mock_url)[seen_before:]
        return calls if len(calls) >= 2 and all("status" in c for c in calls) else []

    calls = eventually(both_calls, timeout=10, what="the mock's record of both calls")
    assert [c["status"] for c in calls] == [429, 200]
    waited = calls[1]["received_at"] - calls[0]["received_at"]
    assert waited >= 3.0, f"retried {waited:.2f}s after a 429 that asked for 3s"


def test_the_countdown_runs_down_to_retrying_now_on_both_screens_without_red(stack, desktop, phone):
    # The phone's clock is 90 minutes wrong; the countdown still agrees, measured on server time.
    phone_clock = "{ const realNow = Date.now; Date.now = () => realNow() - 90 * 60 * 1000; }"
    seen = countdowns_of_a_retry(stack, desktop, phone, phone_clock=phone_clock, wait_s=3)

    for page, shown in zip((desktop, phone), seen, strict=True):
        assert shown, page_seen(page)
        assert shown[-1] == RETRYING_NOW, shown
        seconds = [seconds_left(text) for text in shown[:-1]]
        assert len(seconds) >= 2 and seconds == sorted(seconds, reverse=True), shown
        assert len(set(seconds)) == len(seconds) and seconds[0] <= 3, shown
        assert page_seen(page)["red"] == []


def test_a_page_whose_countdown_runs_behind_the_server_still_shows_retrying_now(
    stack, desktop, phone
):
    # The phone's clock goes back 1.5 s once its banner has shown for 0.3 s (a network time
    # correction; a banner frame that reached the page late does the same): its countdown runs
    # behind the server's. The retry's claim is what says "Retrying now…" before the answer
    # takes the banner away (without it this page ends on "Retrying in 0:02").
    phone_clock = """{ const realNow = Date.now;
        Date.now = () => {
          const el = document.querySelector('#notice [data-server-now-ms]');
          const shown_ms = el ? realNow() - Number(el.dataset.serverNowMs) : 0;
          return realNow() - (shown_ms > 300 ? 1500 : 0);
        }; }"""
    seen = countdowns_of_a_retry(stack, desktop, phone, phone_clock=phone_clock, wait_s=2)

    for shown in seen:
        assert shown and shown[-1] == RETRYING_NOW, shown


def countdowns_of_a_retry(stack, desktop, phone, *, phone_clock: str, wait_s: int) -> list:
    """One rate-limited prompt (retry after ``wait_s``) sent from the phone, whose clock is
    ``phone_clock``; each page's countdown texts, in the order shown, once both have the answer."""
    phone.context.add_init_script(phone_clock)
    both_open(stack, desktop, phone, f"Countdown {wait_s} s")
    send(phone, f"/rate-limited:1:{wait_s} count down with me")
    for page in (desktop, phone):
        wait_for_answer(page)
    return [
        [text for text in page_seen(page)["countdowns"] if text is not None]
        for page in (desktop, phone)
    ]


def seconds_left(text: str) -> int:
    minutes, seconds = text.removeprefix("Retrying in ").split(":")
    return int(minutes) * 60 + int(seconds)
