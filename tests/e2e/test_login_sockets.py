"""A page whose login ends elsewhere (another tab logs out) says so, goes to the login page and
opens no new socket on the way: the 4410 close is final, never a reconnect loop. Real Chromium
against the real stack."""

from __future__ import annotations

import re
import time

import pytest

from tests.e2e.conftest import DESKTOP, logged_in_page

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]


def test_a_board_whose_login_ended_in_another_tab_goes_to_the_login_page_without_reconnecting(
    browser, stack
):
    page = logged_in_page(browser, stack, **DESKTOP)
    opened_sockets: list[str] = []
    seen: list[str] = []  # what happened, in order, for the failure message

    def socket_opened(socket) -> None:
        opened_sockets.append(socket.url)
        seen.append(f"{time.monotonic():.2f} open {socket.url}")
        socket.on("close", lambda _: seen.append(f"{time.monotonic():.2f} closed {socket.url}"))

    page.on("websocket", socket_opened)
    page.on("framenavigated", lambda frame: seen.append(f"{time.monotonic():.2f} at {frame.url}"))
    page.wait_for_function(
        "() => window.kandevLive.socket && window.kandevLive.socket.readyState === 1"
    )

    opened_sockets.clear()  # the board's own, opened by the login's redirect
    seen.append(f"{time.monotonic():.2f} logging out in another tab")
    other_tab = page.context.new_page()
    other_tab.goto("/")
    other_tab.click("form.logout button[type=submit]")
    other_tab.wait_for_url(re.compile(r"/accounts/login/"))
    other_tab.close()

    status = page.locator("#connection")
    status.wait_for(state="visible", timeout=5_000)
    assert "You have been signed out" in status.inner_text()
    page.wait_for_url(re.compile(r"/accounts/login/\?next=%2F$"), timeout=10_000)
    assert opened_sockets == [], seen
    page.context.close()
