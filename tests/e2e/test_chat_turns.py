"""Regenerate, edit and resend, stopping a retry, the transcript's labels, switching target from a
failure card, focus, and an axe-core check of the board and session pages, in a real Chromium on
desktop (1280x800) and phone (390x844, touch) against the real stack. Each point has a twin: the
desktop acts with its keyboard or mouse while the phone watches, and the phone acts by touch."""

from __future__ import annotations

from pathlib import Path

import pytest

from recovery import wording
from tests.e2e.test_chat_experience import watch_console
from tests.e2e.test_live_session import (
    assert_fits_a_phone,
    open_session,
    send,
    wait_for_answer,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
ANSWER = "#transcript .msg--assistant"
CARD = "#recovery .recovery-card"
BACKUP = "Mock backup"

BACKUP_CODE = f"""
from sessions_app.models import ProviderTarget
from sessions_app.services import target_create
if not ProviderTarget.objects.filter(name={BACKUP!r}).exists():
    target_create(name={BACKUP!r}, kind=ProviderTarget.Kind.MOCK, model="mock-2")
"""


@pytest.fixture(scope="module")
def backup_target(stack):
    """A second target, so failure cards offer "Try another target"."""
    stack.manage("shell", "-c", BACKUP_CODE)
    return BACKUP


def press(page, selector: str) -> None:
    """A tap on a touch screen, a click elsewhere."""
    if page.evaluate("() => matchMedia('(pointer: coarse)').matches"):
        page.tap(selector)
    else:
        page.click(selector)


def focused_id(page) -> str:
    return page.evaluate("() => document.activeElement && document.activeElement.id")


def wait_for_focus_in_composer(page) -> None:
    page.wait_for_function("() => document.activeElement.id === 'composer-text'")


def open_on_both(stack, title: str, *pages) -> int:
    session_id = stack.new_session(title)
    for page in pages:
        open_session(page, session_id)
    return session_id


# ---- regenerate ---------------------------------------------------------------------------------


SHOWN = ":not([hidden])"


def wait_for_regenerated(page) -> None:
    """The old answer is hidden away and the new one has finished (not merely the old one)."""
    page.wait_for_selector(f"{ANSWER}[hidden]", state="attached", timeout=30_000)
    page.wait_for_function(
        "() => document.querySelectorAll('#transcript .msg--assistant:not([hidden])"
        "[data-status=complete]').length === 1",
        timeout=60_000,
    )
    wait_for_answer(page)


def shown_ids(page, role: str) -> list[str]:
    return page.eval_on_selector_all(
        f"#transcript .msg--{role}{SHOWN}", "rows => rows.map(r => r.id)"
    )


def wait_for_shown(page, role: str, ids: list[str]) -> None:
    page.wait_for_function(
        "([role, ids]) => JSON.stringify(Array.from(document.querySelectorAll("
        "`#transcript .msg--${role}:not([hidden])`)).map(r => r.id)) === JSON.stringify(ids)",
        arg=[role, ids],
        timeout=30_000,
    )


def version_count(page, role: str) -> list[str]:
    return page.locator(f"#transcript .msg--{role}{SHOWN} .version-count").all_inner_texts()


def regenerate_and_watch(actor, watcher) -> None:
    send(actor, "regenerate me")
    for page in (actor, watcher):
        wait_for_answer(page)
    first = shown_ids(actor, "assistant")
    press(actor, f"{ANSWER}[data-latest] .regenerate")
    for page in (actor, watcher):
        wait_for_regenerated(page)
        # One answer shown, the second of two; the first kept, hidden.
        assert page.locator(f"{ANSWER}{SHOWN}").count() == 1
        assert page.locator(f"#{first[0]}").is_hidden()
        assert version_count(page, "assistant") == ["2 / 2"]
        # Regenerate sits on the new answer only.
        assert page.locator(f"{ANSWER} .regenerate:visible").count() == 1
    wait_for_focus_in_composer(actor)
    second = shown_ids(actor, "assistant")
    # "<" brings the first answer back on both screens, ">" the second again.
    press(actor, f"{ANSWER}{SHOWN} .version-prev")
    for page in (actor, watcher):
        wait_for_shown(page, "assistant", first)
        assert version_count(page, "assistant") == ["1 / 2"]
        assert page.locator(f"{ANSWER}{SHOWN} .version-prev").is_disabled()
    press(actor, f"{ANSWER}{SHOWN} .version-next")
    for page in (actor, watcher):
        wait_for_shown(page, "assistant", second)
        assert version_count(page, "assistant") == ["2 / 2"]


def test_regenerate_on_desktop_replaces_the_answer_for_the_phone_too(stack, desktop, phone):
    open_on_both(stack, "Regenerate desktop", desktop, phone)
    regenerate_and_watch(desktop, phone)


def test_regenerate_on_the_phone_replaces_the_answer_for_the_desktop_too(stack, desktop, phone):
    open_on_both(stack, "Regenerate phone", desktop, phone)
    regenerate_and_watch(phone, desktop)
    assert_fits_a_phone(phone)


def test_regenerate_and_edit_hide_while_a_turn_runs(stack, desktop):
    open_on_both(stack, "Hidden while running", desktop)
    send(desktop, "first")
    wait_for_answer(desktop)
    assert desktop.locator(f"{ANSWER} .regenerate").is_visible()
    send(desktop, "/slow-stream:300 second")
    desktop.wait_for_selector("#composer-actions .btn--stop")
    assert desktop.locator(".turn-action:visible").count() == 0
    desktop.keyboard.press("Escape")
    desktop.wait_for_selector("#composer-actions .btn--send", timeout=30_000)


# ---- edit and resend ----------------------------------------------------------------------------


def test_edit_on_desktop_with_the_keyboard_resends_for_both_viewers(stack, desktop, phone):
    open_on_both(stack, "Edit desktop", desktop, phone)
    send(desktop, "waht is calm")
    wait_for_answer(desktop)
    desktop.click("#transcript .msg--user[data-latest] .edit-prompt")
    box = desktop.locator("#transcript .edit-form textarea")
    assert box.input_value() == "waht is calm"
    assert desktop.evaluate("() => document.activeElement.name") == "text"
    box.fill("what is calm")
    box.press("Control+Enter")
    for page in (desktop, phone):
        page.wait_for_selector("#transcript .msg--user[hidden]", state="attached", timeout=30_000)
        page.wait_for_function(
            "() => Array.from(document.querySelectorAll('#transcript .msg--assistant'))"
            ".some(m => !m.hidden && m.dataset.status === 'complete'"
            " && m.textContent.includes('You asked about what is calm'))",
            timeout=60_000,
        )
        prompts = page.locator(f"#transcript .msg--user{SHOWN} .text").all_inner_texts()
        assert prompts == ["what is calm"]
        assert version_count(page, "user") == ["2 / 2"]
        assert page.locator(f"{ANSWER}{SHOWN}").count() == 1  # the old answer went with its prompt
    wait_for_focus_in_composer(desktop)


def test_edit_on_the_phone_by_touch_and_escape_closes_the_form(stack, desktop, phone):
    open_on_both(stack, "Edit phone", desktop, phone)
    send(phone, "hello there")
    wait_for_answer(phone)
    phone.tap("#transcript .msg--user[data-latest] .edit-prompt")
    phone.locator("#transcript .edit-form textarea").fill("hello again")
    assert_fits_a_phone(phone)
    phone.tap("#transcript .edit-form .edit-send")
    desktop.wait_for_selector("#transcript .msg--user[hidden]", state="attached", timeout=30_000)
    for page in (desktop, phone):
        wait_for_answer(page)
        page.wait_for_selector(f"{ANSWER}{SHOWN}:has-text('hello again')")
    # Esc closes an open edit form without sending; the Edit button gets the focus back.
    desktop.click("#transcript .msg--user[data-latest] .edit-prompt")
    desktop.keyboard.press("Escape")
    assert desktop.locator(".edit-form").count() == 0
    assert desktop.evaluate("() => document.activeElement.classList.contains('edit-prompt')")


def edit_an_earlier_prompt_and_watch(actor, watcher) -> None:
    send(actor, "one")
    wait_for_answer(actor)
    send(actor, "two")
    for page in (actor, watcher):
        wait_for_shown(page, "user", shown_ids(actor, "user"))
        wait_for_answer(page)
    original = shown_ids(actor, "user")
    press(actor, f"#{original[0]} .edit-prompt")  # the first prompt, not the latest
    actor.locator("#transcript .edit-form textarea").fill("one, again")
    press(actor, "#transcript .edit-form .edit-send")
    for page in (actor, watcher):
        page.wait_for_function(
            "() => Array.from(document.querySelectorAll('#transcript .msg--assistant'))"
            ".some(m => !m.hidden && m.dataset.status === 'complete'"
            " && m.textContent.includes('You asked about one, again'))",
            timeout=60_000,
        )
        # The edit branched from the first prompt: what followed it is the other version.
        assert page.locator(f"#transcript .msg--user{SHOWN} .text").all_inner_texts() == [
            "one, again"
        ]
        assert version_count(page, "user") == ["2 / 2"]
    press(actor, f"#transcript .msg--user{SHOWN} .version-prev")
    for page in (actor, watcher):
        wait_for_shown(page, "user", original)
        assert version_count(page, "user") == ["1 / 2"]
        assert page.locator(f"{ANSWER}{SHOWN}").count() == 2


def test_desktop_edits_an_earlier_prompt_and_switches_back_and_the_phone_follows(
    stack, desktop, phone
):
    open_on_both(stack, "Branch desktop", desktop, phone)
    edit_an_earlier_prompt_and_watch(desktop, phone)


def test_phone_edits_an_earlier_prompt_and_switches_back_and_the_desktop_follows(
    stack, desktop, phone
):
    open_on_both(stack, "Branch phone", desktop, phone)
    edit_an_earlier_prompt_and_watch(phone, desktop)
    assert_fits_a_phone(phone)


def test_the_version_shown_survives_a_reload(stack, desktop):
    open_on_both(stack, "Version reload", desktop)
    send(desktop, "keep me")
    wait_for_answer(desktop)
    first = shown_ids(desktop, "assistant")
    desktop.click(f"{ANSWER}[data-latest] .regenerate")
    wait_for_regenerated(desktop)
    desktop.click(f"{ANSWER}{SHOWN} .version-prev")
    wait_for_shown(desktop, "assistant", first)
    desktop.reload()
    wait_for_shown(desktop, "assistant", first)
    assert version_count(desktop, "assistant") == ["1 / 2"]


# ---- one meaning for stopping a retry -----------------------------------------------------------


def wait_then_stop(actor, watcher, stop) -> None:
    """A retry waits; ``stop`` ends it from the composer; both screens show the card the banner's
    Cancel leads to, and the prompt kept in the box then goes through."""
    stop(actor)
    for page in (actor, watcher):
        page.wait_for_selector(f"{CARD} .recovery-resume", timeout=30_000)
        page.wait_for_selector(f"{CARD} .recovery-fresh")
        assert page.locator("#notice .notice").count() == 0
        assert page.inner_text("#session-state") == "Needs attention"
        assert wording.RETRY_CANCELLED in page.inner_text(f"{CARD} .recovery-explanation")
    assert actor.input_value("#composer-text") == "a new question"  # nothing lost
    press(actor, "#composer-actions .btn--send")
    for page in (actor, watcher):
        page.wait_for_selector("#transcript .msg--user:has-text('a new question')", timeout=30_000)
    wait_for_answer(actor)


def start_waiting(actor, watcher) -> None:
    send(actor, "/overloaded:99 hello")
    for page in (actor, watcher):
        page.wait_for_selector("#notice .notice-attempt:has-text('attempt 1 of 5')", timeout=60_000)


def test_desktop_a_prompt_during_a_wait_is_refused_and_esc_cancels_the_retry(stack, desktop, phone):
    open_on_both(stack, "Wait desktop", desktop, phone)
    start_waiting(desktop, phone)
    desktop.fill("#composer-text", "a new question")
    desktop.press("#composer-text", "Enter")
    desktop.wait_for_selector(f"#composer-error:has-text('{wording.RETRY_PENDING[:30]}')")
    assert desktop.locator("#transcript .msg--user").count() == 1
    # The banner did not restart: the same retry is still scheduled.
    assert desktop.locator("#notice .notice-attempt").inner_text() == "(attempt 1 of 5)"
    wait_then_stop(desktop, phone, lambda page: page.keyboard.press("Escape"))


def test_phone_stop_during_a_wait_cancels_the_retry_like_the_banner(stack, desktop, phone):
    open_on_both(stack, "Wait phone", desktop, phone)
    start_waiting(phone, desktop)
    # While a retry waits the composer offers Stop, not Send (a prompt would be refused).
    assert phone.locator("#composer-actions .btn--send").count() == 0
    phone.locator("#composer-text").fill("a new question")
    wait_then_stop(phone, desktop, lambda page: page.tap("#composer-actions .btn--stop"))


# ---- what the transcript says -------------------------------------------------------------------


@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_a_recovered_answer_says_it_was_retried(stack, request, screen):
    page = request.getfixturevalue(screen)
    open_on_both(stack, f"Recovered {screen}", page)
    send(page, "/overloaded:1 hi")
    page.wait_for_selector("#notice .notice", timeout=60_000)
    wait_for_answer(page)
    line = page.locator(f"{ANSWER} .msg-recovered")
    line.wait_for(timeout=30_000)
    assert line.inner_text() == "Recovered after 1 retry (provider overloaded)."


def test_start_fresh_shows_a_new_context_divider_on_both_screens(stack, desktop, phone):
    open_on_both(stack, "Fresh divider", desktop, phone)
    send(desktop, "/overloaded:99 hi")
    desktop.wait_for_selector("#notice .notice", timeout=60_000)
    desktop.click("#notice .notice-cancel")
    phone.wait_for_selector(f"{CARD} .recovery-fresh")
    phone.tap(f"{CARD} .recovery-fresh")
    wait_for_focus_in_composer(phone)
    for page in (desktop, phone):
        divider = page.locator("#transcript .context-divider")
        divider.wait_for(timeout=30_000)
        assert divider.inner_text() == wording.NEW_CONTEXT
        assert page.locator("#transcript .msg--user").count() == 2
    desktop.wait_for_selector("#notice .notice", timeout=60_000)
    desktop.click("#notice .notice-cancel")  # leave the worker idle for the next test
    desktop.wait_for_selector(f"{CARD} .recovery-resume")


def test_an_answer_superseded_by_resume_is_labelled_on_both_screens(stack, desktop, phone):
    open_on_both(stack, "Superseded", desktop, phone)
    send(phone, "/overloaded-after-text:1 hi")
    desktop.wait_for_selector(f"{CARD} .recovery-resume", timeout=60_000)
    desktop.click(f"{CARD} .recovery-resume")
    wait_for_focus_in_composer(desktop)
    for page in (desktop, phone):
        wait_for_answer(page)
        flag = page.locator(f"{ANSWER}.msg--incomplete .msg-superseded")
        flag.wait_for(timeout=30_000)
        assert flag.inner_text() == wording.SUPERSEDED_BY_RESUME
        assert page.locator(f"{ANSWER}:not(.msg--incomplete)").count() == 1


# ---- failure cards: switching target, no primary Resume that would repeat -----------------------


def switch_and_watch(actor, watcher, choose) -> None:
    send(actor, "/auth hello")
    for page in (actor, watcher):
        page.wait_for_selector(f"{CARD} .recovery-switch select", timeout=60_000)
        options = page.locator(f"{CARD} .recovery-switch option").all_inner_texts()
        assert options == [BACKUP]
        assert page.locator(f"{CARD} .recovery-resume.btn--primary").count() == 1
    choose(actor)
    for page in (actor, watcher):
        # Every viewer's card now offers the way back to the first target.
        page.wait_for_selector(
            f"{CARD} .recovery-switch option:text-is('Mock')", state="attached", timeout=30_000
        )
        assert page.locator(f"{CARD} .recovery-switch option").all_inner_texts() == ["Mock"]
    wait_for_focus_in_composer(actor)


def test_desktop_switches_target_from_the_card_and_the_phone_follows(
    stack, desktop, phone, backup_target
):
    open_on_both(stack, "Switch desktop", desktop, phone)

    def choose(page):
        page.select_option(f"{CARD} .recovery-switch select", label=BACKUP)
        page.click(f"{CARD} .recovery-switch-go")

    switch_and_watch(desktop, phone, choose)


def test_phone_switches_target_from_the_card_and_the_desktop_follows(
    stack, desktop, phone, backup_target
):
    open_on_both(stack, "Switch phone", desktop, phone)

    def choose(page):
        page.select_option(f"{CARD} .recovery-switch select", label=BACKUP)
        page.tap(f"{CARD} .recovery-switch-go")

    switch_and_watch(phone, desktop, choose)
    assert_fits_a_phone(phone)


# ---- accessibility ------------------------------------------------------------------------------


def axe_serious(page, within: str | None = None) -> list[str]:
    """Serious and critical axe-core violations on the page (or in the elements ``within``
    selects), one line each."""
    # Evaluated, not added as a script tag: the page's CSP (script-src 'self') refuses an
    # inline script, and the page must not be given a weaker policy to be tested.
    page.evaluate(AXE.read_text())
    results = page.evaluate(
        "(within) => axe.run(within || document, { resultTypes: ['violations'] })", within
    )
    return [
        f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:3]}"
        for v in results["violations"]
        if v["impact"] in ("serious", "critical")
    ]


@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_axe_finds_no_serious_violation_on_the_board_and_session_pages(
    stack, request, screen, backup_target
):
    page = request.getfixturevalue(screen)
    errors = watch_console(page)
    page.goto("/")
    assert axe_serious(page) == []

    # A session with a rendered answer, a replaced one, and a failure card with its disclosure
    # and target switch; then one with the retry banner up.
    open_on_both(stack, f"Axe {screen}", page)
    send(page, "see\n\n```python\nprint('hi')\n```")
    wait_for_answer(page)
    press(page, f"{ANSWER}[data-latest] .regenerate")
    wait_for_regenerated(page)
    send(page, "/auth hello")
    page.wait_for_selector(f"{CARD} .recovery-switch", timeout=60_000)
    assert axe_serious(page) == []
    press(page, f"{CARD} .recovery-fresh")
    page.wait_for_selector(f"{CARD} .recovery-resume", timeout=60_000)

    open_on_both(stack, f"Axe banner {screen}", page)
    send(page, "/overloaded:99 hi")
    page.wait_for_selector("#notice .notice", timeout=60_000)
    assert axe_serious(page) == []
    press(page, "#notice .notice-cancel")
    page.wait_for_selector(f"{CARD} .recovery-resume")
    assert errors == []
