"""An ACP agent session in a real Chromium, on a desktop and a phone at once, against the real
stack: Daphne, a Celery worker that starts our mock ACP agent as a subprocess for every attempt."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest

from tests.e2e.conftest import USERNAME
from tests.e2e.test_live_session import LAST_ASSISTANT, open_session, send, transcript

pytestmark = pytest.mark.browser

# Records the text of every transcript row ever added, so a test can prove a row was shown live
# and then taken away (a row added and deleted between two polls would otherwise be invisible).
WATCH_ROWS = """() => {
  window.seenRows = [];
  new MutationObserver((records) => {
    for (const record of records) for (const node of record.addedNodes) {
      if (node.nodeType === 1 && node.matches('.msg')) window.seenRows.push(node.textContent);
    }
  }).observe(document.querySelector('#transcript'), {childList: true, subtree: true});
}"""


@pytest.fixture(scope="module", autouse=True)
def acp_environment(tmp_path_factory):
    """Set before the module's stack starts, so its worker (and every agent it starts) sees it:
    the mock agent's counters live in a directory of this module's own, and the retry ladder
    waits seconds, not the production minutes."""
    directory = tmp_path_factory.mktemp("acp")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KANDEV_MOCK_ACP_STATE", str(directory / "state.json"))
        patch.setenv("KANDEV_ACP_WORKDIR", str(directory / "work"))
        patch.setenv("KANDEV_RETRY_DELAYS", "3,3,3,3")
        patch.setenv("KANDEV_RETRY_JITTER", "0")
        yield


def acp_session(stack, title: str) -> int:
    code = (
        "from django.contrib.auth import get_user_model\n"
        "from sessions_app.management.commands.seed_demo import ACP_TARGET_NAME\n"
        "from sessions_app.models import ProviderTarget\n"
        "from sessions_app.services import session_create, target_create\n"
        "target = ProviderTarget.objects.filter(name=ACP_TARGET_NAME).first() or target_create(\n"
        "    name=ACP_TARGET_NAME, kind='acp', agent_kind='mock')\n"
        f"user = get_user_model().objects.get(username={USERNAME!r})\n"
        f"print(session_create(owner=user, target=target, title={title!r}).pk)\n"
    )
    return int(stack.manage("shell", "-c", code).strip().splitlines()[-1])


def wait_for_complete_answer(page, text: str) -> None:
    page.wait_for_function(
        f"""(text) => {{ const m = {LAST_ASSISTANT};
            return m && m.dataset.status === 'complete' && m.textContent.includes(text) }}""",
        arg=text,
        timeout=90_000,
    )


def test_an_overloaded_agent_shows_the_banner_to_both_viewers_and_recovers(stack, desktop, phone):
    session_id = acp_session(stack, "Overloaded agent")
    for page in (desktop, phone):
        open_session(page, session_id)
    question = f"summarise the notes {secrets.token_hex(4)}"

    send(desktop, f"/overloaded:2 {question}")

    for page in (desktop, phone):
        page.wait_for_function(
            "() => document.querySelector('#notice').textContent.includes('attempt 1 of')",
            timeout=60_000,
        )
    assert "ACP mock agent · mock-sonnet" in desktop.inner_text("#notice")
    desktop.screenshot(path="/tmp/kandev-acp-banner-desktop.png")
    phone.screenshot(path="/tmp/kandev-acp-banner-phone.png")
    for page in (desktop, phone):
        wait_for_complete_answer(page, f"Mock agent reply to: {question}")
        page.wait_for_function("() => !document.querySelector('#notice .notice')")
        # Idle on both screens: Regenerate and Edit show only once the turn has ended.
        page.wait_for_selector("#composer-actions .btn--send")
    assert transcript(desktop) == transcript(phone)
    assert transcript(desktop).count(f"Mock agent reply to: {question}") == 1


def test_an_abandoned_response_is_removed_live_for_both_viewers(stack, desktop, phone):
    session_id = acp_session(stack, "Regenerated answer")
    for page in (desktop, phone):
        open_session(page, session_id)
        page.evaluate(WATCH_ROWS)

    send(desktop, "/response-retry explain the outage")

    for page in (desktop, phone):
        wait_for_complete_answer(page, "This is the replacement answer.")
        seen = page.evaluate("window.seenRows.join('\\n')")
        assert "This draft will be abandoned." in seen  # it was shown live...
        assert "This draft will be abandoned." not in transcript(page)  # ...and taken back
        assert "Drafting a first attempt." not in transcript(page)
    for page in (desktop, phone):
        page.reload()
        page.wait_for_selector("#transcript .msg--assistant")
        shown = transcript(page)
        assert shown.count("This is the replacement answer.") == 1
        assert "This draft will be abandoned." not in shown
        assert "Drafting a first attempt." not in shown


def test_an_agents_edit_waits_for_the_phone_and_the_worker_writes_it_once_allowed(
    stack, desktop, phone
):
    # The whole pipeline: the Celery worker's agent asks, every viewer gets the card, the phone
    # answers, the worker's asker hands the answer to the agent, which then writes the file.
    session_id = acp_session(stack, "Asking agent")
    for page in (desktop, phone):
        open_session(page, session_id)

    send(desktop, "/edit plan.md the agreed plan")

    pending = "#transcript .approval[data-state='pending']"
    for page in (desktop, phone):
        page.wait_for_selector(pending, timeout=60_000)
        page.wait_for_selector("#session-state >> text=Needs approval")
    phone.locator(f"{pending} button[data-kind='allow_once']").click()

    for page in (desktop, phone):
        outcome = page.wait_for_selector(
            "#transcript .approval[data-state='allowed'] .approval-outcome", timeout=30_000
        )
        assert f"by {USERNAME}" in outcome.inner_text()
        wait_for_complete_answer(page, "I changed plan.md.")
    work = Path(os.environ["KANDEV_ACP_WORKDIR"])
    assert (work / f"session-{session_id}" / "plan.md").read_text() == "the agreed plan\n"
