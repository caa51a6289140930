"""The live board and the admin as people use them, in a real Chromium on desktop (1280x800) and
phone (390x844, touch) against the real stack: a card follows its session live (waiting to retry
with a countdown, then idle) without a reload; a session joins an existing task; rename, archive
and search; the session page's session list; the admin's lists fit 1280 px."""

from __future__ import annotations

import re

import pytest

from tests.e2e.retry_watch import page_seen, watch_page
from tests.e2e.test_live_session import assert_fits_a_phone, open_session, send, wait_for_answer

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

STAFF, STAFF_PASSWORD = "operator", "operator-pass-123"
STAFF_CODE = f"""
from django.contrib.auth import get_user_model
from django.utils import timezone
from sessions_app.ladder.models import AttemptRecord
from sessions_app.models import PromptGeneration
User = get_user_model()
User.objects.filter(username={STAFF!r}).exists() or User.objects.create_superuser(
    {STAFF!r}, password={STAFF_PASSWORD!r})
from sessions_app.models import Session
session = Session.objects.order_by("id").first()
number = (session.generations.order_by("-number").values_list("number", flat=True).first() or 0) + 1
generation = PromptGeneration.objects.create(session=session, number=number, state="failed")
for attempt in range(1, 6):
    AttemptRecord.objects.create(
        session=session, generation=generation, attempt=attempt,
        target="Claude Code (mock provider)", code="provider_overloaded",
        rule_id="anthropic.overloaded.529.v1", decision="retry", exposure="none",
        wait_s=9.301869474913463, ttft_ms=1234, bytes_received=123456)
# A retired notice and its ended loop, written by the ladder's own services.
from sessions_app.models import ProviderTarget
from sessions_app.services import session_create
from sessions_app.services.lifecycle.retry_wait import notices_retire
from tests.integration.web.retry_state import waiting_session
owner = User.objects.get(username="viewer")
retried = session_create(owner=owner, target=ProviderTarget.objects.get(name="Mock"),
                         title="A long session title that the notice list has to fit")
notice = waiting_session(session=retried)
notices_retire(session_id=retried.pk, reason="cancelled", by=notice.loop)
"""


def open_board(page, query: str = "") -> None:
    page.goto("/" + query)
    page.wait_for_function(
        "() => window.kandevLive.socket && window.kandevLive.socket.readyState === 1"
    )


def card(page, title: str):
    return page.locator("article.task", has=page.locator(".task-title", has_text=title))


@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_a_card_follows_its_session_live_with_a_countdown_then_idle(stack, request, screen):
    board = request.getfixturevalue(screen)
    title = f"Live card {screen}"
    session_id = stack.new_session(title)
    session_page = board.context.new_page()
    open_board(board)
    assert card(board, title).locator("[data-state]").inner_text() == "Idle"

    open_session(session_page, session_id)
    send(session_page, "[[mock:rate-limited:1:4]] hello")

    badge = card(board, title).locator("[data-state]")
    board.wait_for_function(
        """(title) => [...document.querySelectorAll('article.task')].some(c =>
             c.querySelector('.task-title').textContent.includes(title)
             && c.querySelector('[data-state="waiting_retry"]')
             && /Retrying in 0:0\\d/.test(c.querySelector('.session-countdown').textContent))""",
        arg=title,
        timeout=60_000,
    )
    assert card(board, title).locator("xpath=ancestor::section[1]").get_attribute("id") == (
        "column-in_progress"
    )
    board.screenshot(path=f"/tmp/kandev-{screen}-board-live.png", full_page=True)
    if screen == "phone":
        assert_fits_a_phone(board)
    wait_for_answer(session_page)
    board.wait_for_function(
        """(title) => [...document.querySelectorAll('#column-open article.task')].some(c =>
             c.querySelector('.task-title').textContent.includes(title)
             && c.querySelector('[data-state="idle"]'))""",
        arg=title,
        timeout=60_000,
    )
    assert badge.inner_text() == "Idle"
    session_page.close()


@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_a_session_joins_a_task_that_is_renamed_searched_and_archived(stack, request, screen):
    page = request.getfixturevalue(screen)
    first = f"Rate limited {screen}"
    stack.new_session(first)
    open_board(page)
    # The plain Mock target is preselected.
    assert page.locator("select[name=target] option:checked").inner_text() == "Mock"

    page.fill("input[name=title]", f"Second look {screen}")
    page.select_option("select[name=task]", label=first)
    page.click("text=Start session")
    page.wait_for_url(re.compile(r"/sessions/\d+/$"))

    open_board(page)
    assert card(page, first).count() == 1
    assert card(page, first).locator(".session-title").all_inner_texts() == [
        f"Second look {screen}", first,
    ]  # fmt: skip

    card(page, first).locator(".task-title a").click()
    renamed = f"Calm retries {screen}"
    page.fill("form.rename-form input[name=title]", renamed)
    page.click("form.rename-form button")
    page.wait_for_selector(f"h1:has-text('{renamed}')")
    page.fill("form.rename-form input[name=title]", "   ")
    page.click("form.rename-form button")
    # The browser's own check or ours: either way nothing is renamed and the person is told.
    assert page.locator(f"h1:has-text('{renamed}')").count() == 1

    open_board(page, f"?q={screen.upper()}")
    assert card(page, renamed).count() == 1
    assert (
        page.locator("article.task").count()
        == page.locator(f"article.task:has-text('{screen}')").count()
    )
    if screen == "phone":
        assert_fits_a_phone(page)

    card(page, renamed).locator(".task-title a").click()
    page.click("button:has-text('Archive')")
    page.wait_for_url(re.compile(r"/$"))
    assert card(page, renamed).count() == 0
    page.click("a:has-text('Archived')")
    assert card(page, renamed).count() == 1
    page.screenshot(path=f"/tmp/kandev-{screen}-board-archived.png", full_page=True)


@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_the_session_page_reaches_the_other_sessions(stack, request, screen):
    page = request.getfixturevalue(screen)
    here = stack.new_session(f"Here {screen}")
    there = stack.new_session(f"There {screen}")
    open_session(page, here)

    page.click("#session-switcher > summary")
    link = page.locator(f"#session-switcher a[href='/sessions/{there}/']")
    assert link.is_visible()
    if screen == "phone":
        assert_fits_a_phone(page)
        page.screenshot(path="/tmp/kandev-phone-switcher.png")
    link.click()
    page.wait_for_url(f"**/sessions/{there}/")
    assert page.locator(".session-heading").inner_text() == f"There {screen}"


def test_the_readme_example_shows_its_banner_every_time_in_one_session(stack, desktop, phone):
    """README: `[[mock:overloaded:2]] tell me a joke` fails twice, then answers; sent again in the
    same session it does the same (the mock counts per conversation and starts a played script
    over), on both screens."""
    session_id = stack.new_session("README example")
    for page in (desktop, phone):
        open_session(page, session_id)
    for _ in range(2):
        for page in (desktop, phone):
            watch_page(page)
        answers = desktop.locator("#transcript .msg--assistant").count()
        send(desktop, "[[mock:overloaded:2]] tell me a joke")
        for page in (desktop, phone):
            page.wait_for_function(
                "() => document.querySelectorAll('#transcript .msg--assistant').length"
                f" > {answers}",
                timeout=60_000,
            )
            wait_for_answer(page)
            attempts = page_seen(page)["attempts"]
            assert "(attempt 1 of 5)" in attempts and "(attempt 2 of 5)" in attempts, attempts


def test_the_admins_notice_and_attempt_lists_fit_1280_px(stack, browser):
    stack.manage("shell", "-c", STAFF_CODE)
    context = browser.new_context(base_url=stack.base_url, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto("/admin/login/")
    page.fill("input[name=username]", STAFF)
    page.fill("input[name=password]", STAFF_PASSWORD)
    page.click("input[type=submit], button[type=submit]")
    page.wait_for_url("**/admin/")
    for path in ("attemptrecord", "retrynotice", "retryloop"):
        page.goto(f"/admin/ladder/{path}/")
        page.wait_for_selector("#changelist")
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{path}: the page is {overflow}px wider than 1280"
        assert page.locator("#result_list tbody tr").count() >= 1, f"{path}: no rows to measure"
        clipped = page.evaluate(
            """() => { const t = document.querySelector('#result_list');
                       return t.scrollWidth - t.parentElement.clientWidth; }"""
        )
        assert clipped <= 0, f"{path}: the table is clipped by {clipped}px"
        page.screenshot(path=f"/tmp/kandev-admin-{path}.png", full_page=True)
    assert "9.301869474913463" not in page.content()
    page.goto("/admin/ladder/attemptrecord/")
    assert ">9.3 s<" in page.content()
    context.close()


def _only_loopback(page) -> list[str]:
    """Abort every request that would leave the machine, and list them: the page must work
    offline."""
    blocked: list[str] = []

    def route(route_) -> None:
        host = re.match(r"^[a-z]+://([^/:]+)", route_.request.url)
        if host and not host.group(1).startswith("127."):
            blocked.append(route_.request.url)
            route_.abort()
        else:
            route_.continue_()

    page.route("**/*", route)
    return blocked


@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_the_api_docs_render_offline_from_our_own_static_files(stack, request, screen):
    page = request.getfixturevalue(screen)
    blocked = _only_loopback(page)
    page.goto("/api/docs")
    page.wait_for_selector(".swagger-ui .info .title:has-text('Kandev Web API')", timeout=30_000)
    page.wait_for_selector(".swagger-ui .opblock-summary-path:has-text('/api/v1/tasks')")
    assert blocked == []


def _column_of(page, title: str) -> str:
    return card(page, title).locator("xpath=ancestor::section[1]").get_attribute("id") or ""


def _wait_in_column(page, title: str, column: str) -> None:
    page.wait_for_function(
        """([title, column]) => [...document.querySelectorAll(`#column-${column} article.task`)]
             .some(c => c.querySelector('.task-title').textContent.includes(title))""",
        arg=[title, column],
        timeout=30_000,
    )


@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_a_task_is_marked_done_on_its_page_and_reopened(stack, request, screen):
    page = request.getfixturevalue(screen)
    title = f"Finish me {screen}"
    stack.new_session(title)
    open_board(page)
    card(page, title).locator(".task-title a").click()
    page.click("button:has-text('Mark done')")
    page.wait_for_selector("h1 .badge--done:has-text('Done')")
    page.click("a:has-text('Board')")
    _wait_in_column(page, title, "done")
    card(page, title).locator(".task-title a").click()
    page.click("button:has-text('Reopen')")
    page.wait_for_selector("h1 .badge--open:has-text('Open')")


@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_a_card_moves_to_done_and_back_with_the_keyboard(stack, request, screen):
    page = request.getfixturevalue(screen)
    title = f"Keyboard move {screen}"
    stack.new_session(title)
    open_board(page)
    menu = card(page, title).locator(".move-menu")
    menu.locator("summary").focus()
    page.keyboard.press("Enter")
    menu.locator("button:has-text('Done')").focus()
    page.keyboard.press("Enter")
    _wait_in_column(page, title, "done")
    if screen == "phone":
        assert_fits_a_phone(page)
    menu = card(page, title).locator(".move-menu")
    menu.locator("summary").focus()
    page.keyboard.press("Enter")
    menu.locator("button:has-text('Open')").focus()
    page.keyboard.press("Enter")
    _wait_in_column(page, title, "open")
