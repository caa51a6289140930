"""Tool cards in a real Chromium, on a desktop and a phone watching one ACP session: the mock agent
edits files (a short diff, a long one), runs a command with long, wide, coloured output and one
that fails. The diff reads as a diff, the terminal scrolls inside itself without widening the
phone's page, long blocks start closed (every block on the phone), a reader's choice survives a
live update, and axe-core finds nothing serious on the cards."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import AcpPlaces
from tests.e2e.test_acp_session import acp_session
from tests.e2e.test_chat_experience import watch_console
from tests.e2e.test_chat_turns import axe_serious
from tests.e2e.test_live_session import assert_fits_a_phone, open_session, send
from tests.integration.acp_app.test_tool_cards import (
    HOSTILE_NAME,
    HOSTILE_NEW,
    HOSTILE_OLD,
    HOSTILE_OUTPUT,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

CARDS = "#transcript .tool-call"
# What each block's <details> shows, in transcript order: [kind, status, [open, ...]].
SHOWN = """() => Array.from(document.querySelectorAll('#transcript .tool-call')).map(card => [
  card.dataset.kind, card.dataset.toolStatus,
  Array.from(card.querySelectorAll('details.tool-block')).map(d => d.open)])"""


@pytest.fixture(scope="module")
def work(acp_places: AcpPlaces) -> Path:
    return acp_places.work


@pytest.fixture(scope="module")
def stack_settings(acp_places: AcpPlaces) -> dict[str, str]:
    return acp_places.stack_settings


def write_workspace(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "greet.py").write_text("def greet():\n    return 'hi'\n")
    (folder / "greet.py.new").write_text("def greet():\n    return 'hello'\n")
    (folder / "table.py").write_text("".join(f"ROW_{n} = {n}\n" for n in range(60)))
    (folder / "table.py.new").write_text("".join(f"ROW_{n} = {n + 100}\n" for n in range(60)))
    wide = "".join(
        f"\x1b[3{n % 8}mline {n:03} " + "wide-output-" * 12 + "\x1b[0m\n" for n in range(80)
    )
    (folder / "build.log").write_text(wide)


def wait_for_cards(page, count: int) -> None:
    """``count`` tool cards, the last one finished, the turn over (the composer idle again)."""
    page.wait_for_function(
        """(count) => {
          const cards = document.querySelectorAll('#transcript .tool-call');
          const last = cards[cards.length - 1];
          return cards.length === count && ['done', 'failed'].includes(last.dataset.toolStatus)
            && document.querySelector('#composer-actions .btn--send');
        }""",
        arg=count,
        timeout=90_000,
    )


def run(desktop, phone, prompt: str, count: int) -> None:
    send(desktop, prompt)
    for page in (desktop, phone):
        wait_for_cards(page, count)


def test_tool_cards_read_well_on_a_desktop_and_a_phone(stack, desktop, phone, work):
    session_id = acp_session(stack, "Tool cards")
    write_workspace(work / f"session-{session_id}")
    errors = {page: watch_console(page) for page in (desktop, phone)}
    for page in (desktop, phone):
        open_session(page, session_id)

    run(desktop, phone, "/tool-diff greet.py", 1)
    run(desktop, phone, "/tool-diff table.py", 2)
    run(desktop, phone, "/tool-terminal build.log", 3)
    run(desktop, phone, "/tool-fail", 4)

    # Watched live, each card came once and was revised in place. A desktop opens the short
    # blocks (the small diff, the one-line error) and leaves the long ones closed; a phone closes
    # every one.
    expected = [["edit", "done"], ["edit", "done"], ["execute", "done"], ["execute", "failed"]]
    assert [card[:2] for card in desktop.evaluate(SHOWN)] == expected
    assert [card[2] for card in desktop.evaluate(SHOWN)] == [[True], [False], [False], [True]]
    assert [card[2] for card in phone.evaluate(SHOWN)] == [[False]] * 4
    summaries = desktop.locator(f"{CARDS} details.tool-block > summary").all_text_contents()
    assert summaries[1] == "/workspace/table.py +60 \N{MINUS SIGN}60 (124 lines)"
    assert summaries[2] == "Terminal output (85 lines)"
    assert desktop.locator(f"{CARDS} .pill").all_inner_texts() == ["Done", "Done", "Done", "Failed"]

    # The diff reads as a diff: an added line and a removed one on their own backgrounds.
    small_diff = desktop.locator(CARDS).first
    added = small_diff.locator("pre.diff .gi").last  # the first is the "+++" header
    removed = small_diff.locator("pre.diff .gd").last
    assert added.inner_text() == "+    return 'hello'"
    assert removed.inner_text() == "-    return 'hi'"
    backgrounds = {
        name: desktop.evaluate("(el) => getComputedStyle(el).backgroundColor", element)
        for name, element in (
            ("added", added.element_handle()),
            ("removed", removed.element_handle()),
            ("block", small_diff.locator("pre.diff").element_handle()),
        )
    }
    assert len(set(backgrounds.values())) == 3, backgrounds

    # On the phone the long, wide output scrolls inside its own block; the page stays phone-wide.
    phone.locator(f"{CARDS} details.tool-block--text > summary").first.click()
    terminal = phone.locator(f"{CARDS} pre.terminal").first
    sizes = terminal.evaluate(
        "(el) => [el.scrollWidth > el.clientWidth, el.scrollHeight > el.clientHeight]"
    )
    assert sizes == [True, True]
    assert "\x1b" not in terminal.inner_text() and "[0m" not in terminal.inner_text()
    coloured = terminal.locator(".ansi-fg-1").first
    assert coloured.evaluate("(el) => getComputedStyle(el).color") == "rgb(255, 123, 114)"
    for summary in phone.locator(f"{CARDS} details.tool-block > summary").all():
        if not summary.evaluate("(el) => el.parentElement.open"):
            summary.click()
    assert_fits_a_phone(phone)
    phone.screenshot(path="/tmp/kandev-tool-cards-phone.png", full_page=True)
    desktop.screenshot(path="/tmp/kandev-tool-cards-desktop.png", full_page=True)

    # A reload shows the same cards, each block closed or opened by the same rule.
    for page in (desktop, phone):
        page.reload()
        page.wait_for_selector(CARDS)
    assert [card[2] for card in desktop.evaluate(SHOWN)] == [[True], [False], [False], [True]]
    assert [card[2] for card in phone.evaluate(SHOWN)] == [[False]] * 4

    for page in (desktop, phone):
        assert axe_serious_on_every_card(page) == []
        assert errors[page] == []  # no script error, no CSP refusal


def axe_serious_on_every_card(page) -> list[str]:
    """axe-core's serious findings on each tool card with its blocks open. Each card is scrolled
    into view first: axe leaves colour contrast unchecked on what the transcript's scrolling box
    hides, which would pass a card nobody checked."""
    page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true })")
    ids = page.evaluate(
        "() => Array.from(document.querySelectorAll('#transcript .msg--tool_call'), m => m.id)"
    )
    assert ids
    found: list[str] = []
    for row_id in ids:
        page.locator(f"#{row_id}").scroll_into_view_if_needed()
        found += axe_serious(page, within=f"#{row_id}")
    return found


def test_a_readers_choice_of_open_blocks_survives_the_live_update(stack, desktop, phone, work):
    session_id = acp_session(stack, "Running command")
    for page in (desktop, phone):
        open_session(page, session_id)

    send(desktop, "/tool-terminal:2500")
    for page in (desktop, phone):
        page.wait_for_selector(f"{CARDS}[data-tool-status=running] details.tool-block")
    assert desktop.evaluate(SHOWN) == [["execute", "running", [True]]]  # short: open
    assert phone.evaluate(SHOWN) == [["execute", "running", [False]]]
    desktop.locator(f"{CARDS} summary").click()  # the desktop's reader closes it,
    phone.locator(f"{CARDS} summary").click()  # the phone's opens it

    for page in (desktop, phone):
        wait_for_cards(page, 1)
    assert desktop.evaluate(SHOWN) == [["execute", "done", [False]]]
    assert phone.evaluate(SHOWN) == [["execute", "done", [True]]]
    assert "2 passed" in phone.locator(f"{CARDS} pre.terminal").inner_text()


def test_markup_an_agent_sends_is_shown_as_text_and_runs_nothing(stack, desktop, phone, work):
    session_id = acp_session(stack, "Hostile tool content")
    folder = work / f"session-{session_id}"
    hostile = folder / HOSTILE_NAME
    hostile.parent.mkdir(parents=True, exist_ok=True)
    hostile.write_text(HOSTILE_OLD)
    Path(f"{hostile}.new").write_text(HOSTILE_NEW)
    (folder / "evil.txt").write_text(HOSTILE_OUTPUT)
    dialogs: list[str] = []
    for page in (desktop, phone):
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        open_session(page, session_id)

    run(desktop, phone, f"/tool-diff {HOSTILE_NAME}", 1)
    run(desktop, phone, "/tool-terminal evil.txt", 2)
    for page in (desktop, phone):
        page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true })")
    desktop.reload()
    desktop.wait_for_selector(CARDS)
    desktop.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true })")

    for page in (desktop, phone):
        cards = page.locator(CARDS)
        assert cards.locator("svg, img, script, a").count() == 0
        assert HOSTILE_NAME in cards.first.locator(".tool-title").inner_text()
        assert '+<img src=x onerror="alert(3)">' in cards.first.locator("pre.diff").inner_text()
        shown = cards.last.locator("pre.terminal").inner_text()
        assert "<script>alert(4)</script>" in shown and "\x1b" not in shown
    assert dialogs == []
