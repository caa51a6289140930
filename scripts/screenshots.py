"""Take the README's screenshots: the session page and the board, on desktop and on a phone.

    make screenshots
    .venv/bin/python scripts/screenshots.py     (or this, with DATABASE_URL and REDIS_URL set)

It starts the same stack as the browser tests (a throwaway database, the mock provider, a Celery
worker and Daphne, tests/e2e/conftest.running_stack), plays a short conversation through the real
page in Debian's Chromium (a rendered answer with code, one that recovered after a retry, and a
failure card), and writes docs/screenshots/{session,board}-{desktop,phone}.png. Nothing is faked:
what the pictures show is what the page rendered.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kandev_web.settings")

from playwright.sync_api import sync_playwright  # noqa: E402

from devtools.browser import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.e2e.conftest import (  # noqa: E402
    DESKTOP,
    PHONE,
    logged_in_page,
    running_stack,
)
from tests.e2e.test_live_session import open_session, send, wait_for_answer  # noqa: E402

OUT = ROOT / "docs" / "screenshots"
ANSWERED = (
    "How do I **retry** safely?\n\n"
    "- only before any output\n- never a tool twice\n\n"
    "```python\ndef backoff(attempt):\n    return min(2 ** attempt, 60)\n```\n\nThanks"
)
# A second target, so the failure card shows its "Try another target" choice.
BACKUP_CODE = """
from sessions_app.models import ProviderTarget
from sessions_app.services import target_create
target_create(name="Mock backup", kind=ProviderTarget.Kind.MOCK, model="mock-2")
"""
TITLES = ("Release notes draft", "Flaky deploy check", "Rate limits explained")


def conversation(page, stack) -> int:
    session_id = stack.new_session("Retry strategy")
    open_session(page, session_id)
    send(page, ANSWERED)
    wait_for_answer(page)
    send(page, "/overloaded:1 and if the provider is overloaded?")
    page.wait_for_selector("#notice .notice", timeout=60_000)
    wait_for_answer(page)
    page.wait_for_selector("#transcript .msg-recovered", timeout=30_000)
    send(page, "/auth one more")
    page.wait_for_selector("#recovery .recovery-card", timeout=60_000)
    return session_id


def shoot(page, name: str) -> Path:
    path = OUT / name
    page.wait_for_timeout(300)  # let the last frame's layout settle before the picture
    page.screenshot(path=str(path))
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    written = []
    with running_stack() as stack, sync_playwright() as playwright:
        stack.manage("shell", "-c", BACKUP_CODE)
        for title in TITLES:
            stack.new_session(title)
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        desktop = logged_in_page(browser, stack, **DESKTOP)
        session_id = conversation(desktop, stack)
        written.append(shoot(desktop, "session-desktop.png"))
        desktop.goto("/")
        written.append(shoot(desktop, "board-desktop.png"))
        phone = logged_in_page(browser, stack, **PHONE)
        open_session(phone, session_id)
        phone.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")
        written.append(shoot(phone, "session-phone.png"))
        phone.goto("/")
        written.append(shoot(phone, "board-phone.png"))
        browser.close()
    for path in written:
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
