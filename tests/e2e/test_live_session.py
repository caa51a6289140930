"""A person's view of the live session page, in a real Chromium against the real stack."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.browser

LAST_ASSISTANT = "Array.from(document.querySelectorAll('#transcript .msg--assistant')).at(-1)"


def open_session(page, session_id: int) -> None:
    page.goto(f"/sessions/{session_id}/")
    page.wait_for_function(
        "() => window.kandevLive.socket && window.kandevLive.socket.readyState === 1"
    )


def send(page, text: str) -> None:
    page.fill("#composer-text", text)
    page.click("#composer-actions button")


def wait_for_streaming_text(page) -> None:
    page.wait_for_function(
        f"() => {{ const m = {LAST_ASSISTANT}; return m && m.dataset.status === 'streaming'"
        " && m.querySelector('.text').textContent.length > 0 }",
        timeout=60_000,
    )


def wait_for_answer(page) -> None:
    page.wait_for_function(
        f"() => {{ const m = {LAST_ASSISTANT}; return m && m.dataset.status === 'complete' }}",
        timeout=60_000,
    )
    page.wait_for_selector("#composer-actions .btn--send")


def transcript(page) -> str:
    return page.inner_text("#transcript")


def test_a_desktop_and_a_phone_viewer_watch_one_streamed_answer(stack, desktop, phone):
    session_id = stack.new_session("Two screens")
    open_session(desktop, session_id)
    open_session(phone, session_id)

    send(desktop, "/slow-stream:150 tell me about calm streaming")
    for page in (desktop, phone):
        wait_for_streaming_text(page)  # each screen sees the answer while it is still arriving
    phone.wait_for_selector("#composer-actions .btn--stop")
    desktop.screenshot(path="/tmp/kandev-desktop-streaming.png")
    phone.screenshot(path="/tmp/kandev-phone-streaming.png")

    for page in (desktop, phone):
        wait_for_answer(page)
    expected = "You asked about tell me about calm streaming."
    assert expected in transcript(desktop)
    assert transcript(desktop) == transcript(phone)
    assert transcript(desktop).count(expected) == 1
    desktop.screenshot(path="/tmp/kandev-desktop.png")
    phone.screenshot(path="/tmp/kandev-phone.png")


def assert_fits_a_phone(page) -> None:
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"page is {overflow}px wider than the 390px viewport"
    small = page.evaluate(
        """() => Array.from(
                document.querySelectorAll('a, button, textarea, input, select, summary'))
            .filter(el => el.offsetParent !== null && el.type !== 'hidden')
            .map(el => [el.outerHTML.slice(0, 60), el.getBoundingClientRect()])
            .filter(([, r]) => r.width < 44 || r.height < 44)
            .map(([html, r]) => `${html} ${Math.round(r.width)}x${Math.round(r.height)}`)"""
    )
    assert small == [], f"touch targets under 44px: {small}"


def test_the_session_page_fits_a_phone_with_the_composer_at_the_bottom(stack, phone):
    session_id = stack.new_session("Phone layout")
    open_session(phone, session_id)
    send(phone, "/thinking " + "unbroken" * 40 + " and a long question " * 20)
    wait_for_answer(phone)

    assert_fits_a_phone(phone)
    composer = phone.locator("#composer").bounding_box()
    assert abs(composer["y"] + composer["height"] - 844) <= 1, composer
    phone.screenshot(path="/tmp/kandev-phone-thinking.png")
    phone.goto("/")
    assert_fits_a_phone(phone)
    phone.screenshot(path="/tmp/kandev-phone-board.png", full_page=True)


def test_after_a_dropped_socket_the_page_catches_up_to_what_a_fresh_load_shows(stack, desktop):
    session_id = stack.new_session("Reconnect")
    sockets: list[str] = []
    # The board the login landed on has a live socket of its own; count the session's.
    desktop.on(
        "websocket", lambda ws: sockets.append(ws.url) if "/ws/sessions/" in ws.url else None
    )
    open_session(desktop, session_id)
    desktop.evaluate("window.__sameDocument = true")

    send(desktop, "/slow-stream:250 please survive a reconnect")
    wait_for_streaming_text(desktop)
    desktop.evaluate("window.kandevLive.socket.close()")  # as a network drop: the page must notice
    desktop.wait_for_function(
        "() => window.kandevLive.socket.readyState === 1 && "
        "new URL(window.kandevLive.socket.url).searchParams.get('last_seq') > 0"
    )
    wait_for_answer(desktop)

    assert desktop.evaluate("window.__sameDocument") is True  # caught up without a reload
    assert len(sockets) == 2
    resumed_from = int(re.search(r"last_seq=(\d+)", sockets[1]).group(1))
    assert resumed_from > 0
    caught_up = transcript(desktop)
    fresh = desktop.context.new_page()
    fresh.goto(f"/sessions/{session_id}/")
    assert transcript(fresh) == caught_up
    assert caught_up.count("You asked about please survive a reconnect.") == 1


def test_a_prompt_with_markup_shows_as_text(stack, desktop):
    session_id = stack.new_session("Markup")
    open_session(desktop, session_id)
    send(desktop, "<b>markup</b>")
    wait_for_answer(desktop)
    user_row = desktop.locator("#transcript .msg--user .text").last
    assert user_row.inner_text() == "<b>markup</b>"
    assert desktop.locator("#transcript b").count() == 0


def test_stop_ends_the_answer_and_keeps_the_partial_text_marked_as_incomplete(stack, desktop):
    session_id = stack.new_session("Stop")
    open_session(desktop, session_id)
    send(desktop, "/slow-stream:400 a long answer to interrupt")
    wait_for_streaming_text(desktop)
    desktop.fill("#composer-text", "and another thing")
    desktop.press("#composer-text", "Control+Enter")  # sending while running is refused calmly
    desktop.wait_for_selector("#composer-error:has-text('still working')")
    assert desktop.input_value("#composer-text") == "and another thing"
    desktop.click("#composer-actions .btn--stop")
    desktop.wait_for_selector("#composer-actions .btn--send", timeout=15_000)
    desktop.wait_for_selector("#transcript .msg--assistant.msg--incomplete")
    assert "Incomplete" in desktop.inner_text("#transcript .msg--assistant")
