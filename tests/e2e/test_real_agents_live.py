"""Each real agent CLI (Claude Code, Codex, Gemini CLI, from package-lock.json) through the whole
app: a prompt typed in a real Chromium goes through Daphne to a Celery worker, which starts the
agent against the mock provider; a desktop and a phone viewer watch the same session.

tests/agents/ drives the same agents through the worker's code in-process (with an injected
clock); this module proves the parts those tests skip: the push to browsers, the banner on both
screens, and the Celery worker's own process handling. Marked `agents` (run by `make
test-agents`), not `browser`, so each suite runs it once.
"""

from __future__ import annotations

import json
import secrets
import urllib.request

import pytest

from tests.agents.conftest import REAL_AGENTS, URL_SUFFIX
from tests.e2e.conftest import USERNAME, AcpPlaces
from tests.e2e.retry_watch import page_seen, watch_page
from tests.e2e.test_live_session import LAST_ASSISTANT, open_session, send

pytestmark = pytest.mark.agents

MAX_RETRIES = 5  # the stack's KANDEV_RETRY_MAX_ATTEMPTS
# A real agent starts in seconds (Gemini CLI is the slowest), once per attempt.
AGENT_WAIT_MS = 150_000


@pytest.fixture(scope="module")
def stack_settings(acp_places: AcpPlaces) -> dict[str, str]:
    """Each agent's private home lives under the run's work directory, one per session."""
    return acp_places.stack_settings


def agent_session(stack, kind: str) -> tuple[int, str]:
    """A session on a fresh target of ``kind`` whose base URL names its own mock conversation,
    so the mock counts this test's requests apart from every other."""
    conversation = f"{kind}-{secrets.token_hex(6)}"
    base_url = f"{stack.mock_url}/conversations/{conversation}{URL_SUFFIX[kind]}"
    code = (
        "from django.contrib.auth import get_user_model\n"
        "from sessions_app.agent.registry import AGENTS\n"
        "from sessions_app.services import session_create, target_create\n"
        f"target = target_create(name={conversation!r}, kind='acp', agent_kind={kind!r},\n"
        f"    base_url={base_url!r}, model=AGENTS[{kind!r}].default_model)\n"
        f"user = get_user_model().objects.get(username={USERNAME!r})\n"
        f"print(session_create(owner=user, target=target, title={kind + ' live'!r}).pk)\n"
    )
    return int(stack.manage("shell", "-c", code).strip().splitlines()[-1]), conversation


def conversation_requests(stack, conversation: str) -> list[dict]:
    url = f"{stack.mock_url}/_mock/requests?conversation={conversation}"
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.load(answer)["requests"]


def answers(page) -> list[str]:
    return page.eval_on_selector_all(
        "#transcript .msg--assistant .text", "rows => rows.map(row => row.textContent.trim())"
    )


@pytest.mark.parametrize("kind", REAL_AGENTS)
def test_an_overloaded_real_agent_shows_one_banner_on_both_screens_then_answers_once(
    stack, desktop, phone, kind
):
    session_id, conversation = agent_session(stack, kind)
    for page in (desktop, phone):
        open_session(page, session_id)
        watch_page(page)

    send(desktop, f"[[mock:overloaded:2]] summarise the notes {secrets.token_hex(3)}")

    for page in (desktop, phone):
        page.wait_for_function(
            f"() => {{ const m = {LAST_ASSISTANT}; return m && m.dataset.status === 'complete' }}",
            timeout=AGENT_WAIT_MS,
        )
        page.wait_for_selector("#notice .notice", state="detached", timeout=30_000)
    for page in (desktop, phone):
        seen = page_seen(page)
        # The banner came with the first failure and advanced once per failure, then left: the
        # agent's own retries are off, so the ladder saw (and showed) every one.
        assert seen["attempts"] == [
            None,
            f"(attempt 1 of {MAX_RETRIES})",
            f"(attempt 2 of {MAX_RETRIES})",
            None,
        ], seen
        assert seen["red"] == []
        assert len(answers(page)) == 1, answers(page)
    assert answers(desktop) == answers(phone)
    # Two 529s and the answer: three provider requests in all, none made by the agent itself.
    assert len(conversation_requests(stack, conversation)) == 3
