"""A person over the minute's prompt cap, in a real browser: the composer says why and when to
try again, and keeps what they typed (sessions_app/services/caps.py)."""

from __future__ import annotations

import pytest

from tests.e2e.test_live_session import open_session, send, wait_for_answer

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

CAP = 2


@pytest.fixture(scope="module")
def stack_settings() -> dict[str, str]:
    # The stack's warm-up prompt is the viewer's first of the minute.
    return {"KANDEV_PROMPTS_PER_MINUTE": str(CAP)}


def test_a_prompt_over_the_cap_is_refused_in_the_composer_and_the_text_stays(stack, desktop):
    answered, refused = stack.new_session("Cap answered"), stack.new_session("Cap refused")
    open_session(desktop, answered)
    send(desktop, "hello")
    wait_for_answer(desktop)

    open_session(desktop, refused)
    desktop.fill("#composer-text", "one too many")
    desktop.press("#composer-text", "Enter")

    desktop.wait_for_selector(
        f"#composer-error:has-text('You have sent {CAP} prompts in the last minute')"
    )
    assert "Try again in" in desktop.inner_text("#composer-error")
    assert desktop.input_value("#composer-text") == "one too many"
    assert desktop.locator("#transcript .msg--user").count() == 0
