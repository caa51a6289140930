"""The board and the session page under the Content-Security-Policy, in a real Chromium against the
real stack: nothing the pages need is refused, the live sockets work, and the policy is enforced
(an inline script is refused and reported)."""

from __future__ import annotations

import pytest

from tests.e2e.test_live_session import open_session, send, transcript, wait_for_answer

pytestmark = pytest.mark.browser

# Every violation the page reports, collected from before its first script runs.
RECORD_VIOLATIONS = """
window.cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.cspViolations.push(
    `${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`
  );
});
"""
LIVE_SOCKET = "() => window.kandevLive.socket && window.kandevLive.socket.readyState === 1"


@pytest.fixture
def watched(desktop):
    """The signed-in desktop page, recording CSP violations and console errors."""
    desktop.add_init_script(RECORD_VIOLATIONS)
    errors: list[str] = []
    desktop.on(
        "console",
        lambda message: errors.append(message.text) if message.type == "error" else None,
    )
    desktop.console_errors = errors
    return desktop


def violations(page) -> list[str]:
    return page.evaluate("window.cspViolations")


def test_the_board_and_the_session_page_work_under_the_csp_with_no_violation(stack, watched):
    page = watched
    board = page.goto("/")
    policy = board.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    page.wait_for_function(LIVE_SOCKET)
    assert violations(page) == []

    session_id = stack.new_session("Under the CSP")
    open_session(page, session_id)
    send(page, "[[mock:slow-stream:50]] tell me about policies")
    wait_for_answer(page)  # streamed over the live socket

    assert "You asked about tell me about policies." in transcript(page)
    assert violations(page) == []
    assert [e for e in page.console_errors if "Content Security Policy" in e] == []

    # The policy is really enforced: an inline script is refused, and reported.
    page.evaluate(
        """() => { const s = document.createElement("script");
                   s.textContent = "window.inlineRan = true"; document.head.appendChild(s); }"""
    )
    page.wait_for_function("() => window.cspViolations.length > 0")
    assert page.evaluate("window.inlineRan") is None
    assert violations(page)[0].startswith("script-src")
