"""The chat as a person uses it, in a real Chromium on desktop (1280x800) and phone (390x844,
touch) against the real stack: rendered answers, the composer's keys, copy buttons, timestamps,
focus after Send / Resume / Start fresh, and no console errors along the way."""

from __future__ import annotations

import pytest

from tests.e2e.test_live_session import (
    assert_fits_a_phone,
    open_session,
    send,
    wait_for_answer,
    wait_for_streaming_text,
)
from tests.e2e.test_live_session import (
    transcript as transcript_text,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

ANSWER = "#transcript .msg--assistant"
CARD = "#recovery .recovery-card"
MARKDOWN_PROMPT = (
    "**bold words** and `inline code`\n\n"
    "```python\ndef greet(name):\n    return name\n```\n\n"
    "- first item\n- second item\n\n"
    "| col | n |\n|-----|---|\n| a | 1 |\n"
)
HOSTILE_PROMPT = (
    'x <img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script>\n\n'
    '[click me](javascript:window.__pwned=3) <a href="javascript:window.__pwned=4">raw</a>\n\n'
    "[safe](https://example.com/)\n"
)
WATCH_ERRORS = """() => {
  window.__errors = [];
  for (const name of ["htmx:oobErrorNoTarget", "htmx:swapError", "htmx:targetError"]) {
    document.addEventListener(name, (e) => window.__errors.push(name));
  }
}"""


def watch_console(page) -> list[str]:
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def focused_id(page) -> str:
    return page.evaluate("() => document.activeElement && document.activeElement.id")


def test_a_finished_answer_renders_markdown_with_highlighted_code_on_both_screens(
    stack, desktop, phone
):
    session_id = stack.new_session("Markdown")
    for page in (desktop, phone):
        open_session(page, session_id)
    send(desktop, MARKDOWN_PROMPT)
    for page in (desktop, phone):
        wait_for_answer(page)
        answer = page.locator(ANSWER).last
        assert answer.locator(".md strong").first.inner_text() == "bold words"
        assert answer.locator(".md :not(pre) > code").first.inner_text() == "inline code"
        assert answer.locator(".md li").all_inner_texts() == ["first item", "second item"]
        assert answer.locator(".md table td").first.inner_text() == "a"
        code = answer.locator(".md .code-block pre code.language-python")
        assert code.locator("span.k").first.inner_text() == "def"  # Pygments tokens
        # Highlighting is styled from static/ (no CDN): the keyword has a colour of its own.
        colours = page.evaluate(
            """() => { const k = document.querySelector('.code-block span.k');
                       const p = k.closest('pre');
                       return [getComputedStyle(k).color, getComputedStyle(p).color]; }"""
        )
        assert colours[0] != colours[1]
        # The prompt stays what the person typed.
        prompt = page.locator("#transcript .msg--user .text").last.inner_text()
        assert prompt.startswith("**bold words** and `inline code`")
    phone.locator(ANSWER).last.scroll_into_view_if_needed()
    desktop.screenshot(path="/tmp/kandev-desktop-markdown.png")
    phone.screenshot(path="/tmp/kandev-phone-markdown.png")
    assert_fits_a_phone(phone)


def test_hostile_markup_in_an_answer_never_runs_or_links_to_javascript(stack, desktop, phone):
    session_id = stack.new_session("Hostile")
    for page in (desktop, phone):
        open_session(page, session_id)
    send(phone, HOSTILE_PROMPT)
    for page in (desktop, phone):
        wait_for_answer(page)
        page.reload()  # the page render, not only the live frames
        page.wait_for_selector(f"{ANSWER} .md")
        assert page.evaluate("() => window.__pwned") is None
        transcript = page.locator("#transcript")
        assert transcript.locator("script, img, [onerror]").count() == 0
        assert transcript.locator("a[href^='javascript' i]").count() == 0
        safe = page.locator(f"{ANSWER} .md a[href='https://example.com/']").last
        assert safe.get_attribute("rel") == "noopener noreferrer"
        assert "<script>" in page.locator(ANSWER).last.inner_text()  # shown, as text


def test_enter_sends_shift_enter_adds_a_line_and_focus_stays_in_the_composer(stack, desktop):
    session_id = stack.new_session("Keys")
    open_session(desktop, session_id)
    errors = watch_console(desktop)
    box = desktop.locator("#composer-text")
    box.click()
    box.type("line one")
    box.press("Shift+Enter")
    box.type("line two")
    assert box.input_value() == "line one\nline two"
    assert desktop.locator("#transcript .msg--user").count() == 0
    box.press("Enter")
    desktop.wait_for_selector("#transcript .msg--user")
    assert desktop.locator("#transcript .msg--user .text").inner_text() == "line one\nline two"
    wait_for_answer(desktop)
    assert box.input_value() == ""
    assert focused_id(desktop) == "composer-text"
    assert "Shift+Enter for a new line" in desktop.inner_text("#composer-hint")
    assert errors == []


def test_on_a_phone_enter_is_a_new_line_and_send_sends(stack, phone):
    session_id = stack.new_session("Phone keys")
    open_session(phone, session_id)
    box = phone.locator("#composer-text")
    box.tap()
    box.type("first")
    box.press("Enter")
    box.type("second")
    assert box.input_value() == "first\nsecond"
    assert phone.locator("#transcript .msg--user").count() == 0
    phone.tap("#composer-actions .btn--send")
    wait_for_answer(phone)
    assert phone.locator("#transcript .msg--user .text").inner_text() == "first\nsecond"
    assert focused_id(phone) == "composer-text"


def test_esc_stops_a_running_turn(stack, desktop):
    session_id = stack.new_session("Esc")
    open_session(desktop, session_id)
    send(desktop, "/slow-stream:400 a long answer to interrupt")
    wait_for_streaming_text(desktop)
    desktop.keyboard.press("Escape")
    desktop.wait_for_selector("#composer-actions .btn--send", timeout=15_000)
    desktop.wait_for_selector(f"{ANSWER}.msg--incomplete")


def test_copy_buttons_copy_a_message_and_a_code_block(stack, desktop):
    desktop.context.grant_permissions(["clipboard-read", "clipboard-write"])
    session_id = stack.new_session("Copy")
    open_session(desktop, session_id)
    send(desktop, "see\n\n```python\nprint('hi')\n```\n\nend")
    wait_for_answer(desktop)
    answer = desktop.locator(ANSWER).last

    answer.locator(".code-block .copy").click()
    assert desktop.evaluate("() => navigator.clipboard.readText()") == "print('hi')"
    desktop.wait_for_selector(f"{ANSWER} .code-block .copy[data-copied]:has-text('Copied')")

    answer.locator(".msg-head .copy").click()
    copied = desktop.evaluate("() => navigator.clipboard.readText()")
    assert copied.startswith("You asked about see") and "print('hi')" in copied
    assert answer.locator(".msg-head .copy").get_attribute("aria-label") == "Copy message"


def test_messages_carry_a_relative_time_with_the_absolute_time_on_hover_and_tap(stack, phone):
    session_id = stack.new_session("Times")
    open_session(phone, session_id)
    send(phone, "what time is it")
    wait_for_answer(phone)
    stamp = phone.locator("#transcript .msg--user time.msg-time").last
    assert stamp.get_attribute("datetime").startswith("20")
    assert stamp.inner_text() == "just now"
    absolute = stamp.get_attribute("title")
    assert absolute and absolute != "just now"
    stamp.tap()
    assert stamp.inner_text() == absolute


def test_resume_and_start_fresh_return_focus_to_the_composer_without_console_errors(
    stack, desktop, phone
):
    session_id = stack.new_session("Focus after recovery")
    for page in (desktop, phone):
        open_session(page, session_id)
        page.evaluate(WATCH_ERRORS)
    errors = {"desktop": watch_console(desktop), "phone": watch_console(phone)}

    send(desktop, "/overloaded:99 hi")
    desktop.wait_for_selector("#notice .notice")
    desktop.click("#notice .notice-cancel")
    phone.wait_for_selector(f"{CARD} .recovery-resume")
    phone.tap(f"{CARD} .recovery-resume")
    phone.wait_for_selector("#notice .notice-attempt:has-text('attempt 1 of 5')")
    phone.wait_for_function("() => document.activeElement.id === 'composer-text'")

    desktop.click("#notice .notice-cancel")
    desktop.wait_for_selector(f"{CARD} .recovery-fresh")
    desktop.click(f"{CARD} .recovery-fresh")
    desktop.wait_for_selector("#notice .notice-attempt:has-text('attempt 1 of 5')")
    desktop.wait_for_function("() => document.activeElement.id === 'composer-text'")
    desktop.click("#notice .notice-cancel")  # leave the worker idle for the next test
    for page in (desktop, phone):
        page.wait_for_selector(f"{CARD} .recovery-resume")
        assert page.evaluate("() => window.__errors") == []
    assert errors == {"desktop": [], "phone": []}


def test_a_stale_composer_error_goes_once_the_session_is_idle(stack, desktop):
    session_id = stack.new_session("Stale error")
    open_session(desktop, session_id)
    send(desktop, "/slow-stream:200 something slow")
    wait_for_streaming_text(desktop)
    desktop.fill("#composer-text", "and another")
    desktop.press("#composer-text", "Enter")
    desktop.wait_for_selector("#composer-error:has-text('still working')")
    wait_for_answer(desktop)
    desktop.wait_for_selector("#composer-error:has-text('still working')", state="detached")
    assert desktop.input_value("#composer-text") == "and another"


def test_the_thinking_box_has_a_disclosure_marker_and_the_favicon_loads(stack, desktop):
    session_id = stack.new_session("Chrome")
    open_session(desktop, session_id)
    assert desktop.request.get("/favicon.ico").status == 200  # after the redirect to the svg
    marker = desktop.evaluate(
        """() => { const d = document.createElement('details'); d.className = 'thinking';
                   d.innerHTML = '<summary>Thinking</summary><div class="text">x</div>';
                   document.getElementById('transcript').append(d);
                   return getComputedStyle(d.querySelector('summary'), '::before').content; }"""
    )
    assert marker == '"▸"'


def test_a_dropped_stream_card_speaks_plainly_and_hides_the_exception_until_asked(
    stack, desktop, phone
):
    session_id = stack.new_session("Dropped stream")
    for page in (desktop, phone):
        open_session(page, session_id)
    send(desktop, "/drop hello")
    for page in (desktop, phone):
        page.wait_for_selector(f"{CARD} .recovery-fresh", timeout=60_000)
        headline = page.inner_text(f"{CARD} .recovery-explanation")
        assert "Error" not in headline and "Details:" not in headline, headline
        detail = page.locator(f"{CARD} details.recovery-detail")
        assert detail.get_attribute("open") is None
        assert not detail.locator("p").is_visible()
    phone.tap(f"{CARD} details.recovery-detail summary")
    assert phone.locator(f"{CARD} details.recovery-detail p").is_visible()
    phone.screenshot(path="/tmp/kandev-phone-failure-card.png")
    assert_fits_a_phone(phone)


LIVE_DISTANCE_FROM_BOTTOM = """() => {
  const box = document.getElementById("live");
  return box.scrollHeight - box.scrollTop - box.clientHeight;
}"""


def test_a_phone_at_the_bottom_keeps_following_through_reconnects(stack, desktop, phone):
    """Going offline shows the reconnect notice and coming back hides it; either moves the page,
    and the scroll event that follows must not read as the reader leaving the bottom. The race
    lost most reconnects before the fix, so the test goes offline three times."""
    session_id = stack.new_session("Follow through reconnects")
    for page in (desktop, phone):
        open_session(page, session_id)
    send(desktop, "[[mock:long:400:3:10]] a long answer to scroll past")
    wait_for_answer(phone)
    phone.wait_for_function(f"() => ({LIVE_DISTANCE_FROM_BOTTOM})() < 80")
    for attempt in range(3):
        phone.context.set_offline(True)
        phone.evaluate("window.kandevLive.socket.close(3000, 'network gone')")
        phone.wait_for_selector("#connection:not([hidden])")
        text = f"while the phone was offline, {attempt}"
        send(desktop, text)
        desktop.wait_for_function(
            f"() => document.querySelector('#transcript').innerText.includes('about {text}')"
        )
        phone.context.set_offline(False)
        phone.wait_for_function(
            f"() => document.querySelector('#transcript').innerText.includes('about {text}')"
        )
        phone.wait_for_selector("#connection", state="hidden")
        # Settled: two painted frames after the replay, then the reader must be at the bottom.
        phone.evaluate(
            "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
        )
        assert phone.evaluate(LIVE_DISTANCE_FROM_BOTTOM) < 80, f"reconnect {attempt + 1}"
    assert transcript_text(phone) == transcript_text(desktop)


def test_a_reader_who_scrolled_up_stays_where_they_are_while_new_text_arrives(
    stack, desktop, phone
):
    session_id = stack.new_session("Reading up")
    for page in (desktop, phone):
        open_session(page, session_id)
    send(phone, "[[mock:long:3000:5:2]] a long answer to read")
    wait_for_answer(desktop)
    desktop.hover("#transcript")
    desktop.mouse.wheel(0, -1500)
    desktop.wait_for_function(f"() => ({LIVE_DISTANCE_FROM_BOTTOM})() > 1000")
    before = desktop.evaluate("document.getElementById('live').scrollTop")

    send(phone, "/slow-stream:50 more text below the reader")
    wait_for_answer(desktop)

    assert desktop.evaluate("document.getElementById('live').scrollTop") == before
    assert desktop.evaluate(LIVE_DISTANCE_FROM_BOTTOM) > 1000


def test_the_first_enter_after_an_esc_stop_sends_the_prompt(stack, desktop):
    session_id = stack.new_session("Enter after Esc")
    open_session(desktop, session_id)
    posts: list[str] = []
    desktop.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    send(desktop, "[[mock:slow-stream:300]] hello")
    wait_for_streaming_text(desktop)
    desktop.press("#composer-text", "Escape")
    desktop.wait_for_selector("#composer-actions .btn--send", timeout=15_000)
    wait_for_answer(desktop)
    box = desktop.locator("#composer-text")
    box.type("the prompt after the stop")
    box.press("Enter")
    desktop.wait_for_selector(
        "#transcript .msg--user .text:has-text('the prompt after the stop')", timeout=15_000
    )
    assert box.input_value() == ""
    assert sum(url.endswith("/stop/") for url in posts) == 1, posts


def test_copy_on_an_answer_copies_its_markdown_without_button_labels(stack, desktop):
    desktop.context.grant_permissions(["clipboard-read", "clipboard-write"])
    session_id = stack.new_session("Copy markdown")
    open_session(desktop, session_id)
    send(
        desktop,
        "**two** words\n\n- first\n- second\n\n```python\ndef add(a, b):\n    return a\n```",
    )
    wait_for_answer(desktop)
    desktop.locator(f"{ANSWER} .msg-head .copy").last.click()
    copied = desktop.evaluate("() => navigator.clipboard.readText()")
    assert "**two**" in copied and "- first\n- second" in copied, copied
    assert "```python\ndef add(a, b):\n    return a\n" in copied, copied
    assert "\nCopy\n" not in copied
    # The person's own message copies as typed.
    desktop.locator("#transcript .msg--user .msg-head .copy").last.click()
    typed = desktop.evaluate("() => navigator.clipboard.readText()")
    assert typed.startswith("**two** words\n\n- first")


# The longest badge the server renders today (a queued session waiting on its task's workspace);
# the websocket swaps this markup in whenever a session queues, so the header must survive it.
LONG_BADGE = (
    '<span id="session-state" class="badge badge--queued">Queued · '
    '<span class="queue-place" data-ahead="1">'
    "1 ahead, waiting for the other session of this task to finish</span></span>"
)


@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_the_header_keeps_the_title_readable_next_to_a_long_status_badge(stack, screen, request):
    page = request.getfixturevalue(screen)
    session_id = stack.new_session("Refactor the billing module")
    open_session(page, session_id)
    page.evaluate(
        "(html) => { document.getElementById('session-state').outerHTML = html; }", LONG_BADGE
    )
    heading = page.locator(".session-heading").bounding_box()
    badge = page.locator("#session-state").bounding_box()
    assert heading is not None and badge is not None
    assert heading["width"] >= 120, f"the title is squeezed to {heading['width']:.0f}px"
    # The badge may shorten with an ellipsis, but stays on screen and does not cover the title.
    assert badge["x"] >= heading["x"] + heading["width"] - 1 or badge["y"] >= heading["y"] + 1
    assert badge["x"] + badge["width"] <= page.viewport_size["width"]
    if screen == "phone":
        assert_fits_a_phone(page)
