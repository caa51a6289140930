"""Each real agent CLI edits a real project's worktree only when a person allows it, in a real
Chromium on a desktop and a phone at once: the mock provider asks the agent for its own file tool
(`[[mock:edit:...]]`), the agent asks us (ACP session/request_permission), every viewer sees the
approval card, the phone answers, the desktop sees who did, and the file changes (or not) in the
task's worktree; the task page reviews the change. After an approved edit, a 529 is not retried
and Start fresh puts the worktree back.

Marked `agents` (run by `make test-agents`): it needs the agent CLIs from node_modules.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from tests.agents.conftest import REAL_AGENTS, URL_SUFFIX
from tests.e2e.conftest import USERNAME, AcpPlaces, Stack
from tests.e2e.test_live_session import open_session, send
from tests.e2e.test_real_agents_live import AGENT_WAIT_MS, conversation_requests
from tests.integration.workspaces.conftest import make_repository

pytestmark = [pytest.mark.agents, pytest.mark.timeout(600)]

PENDING = "#transcript .approval[data-state='pending']"


@pytest.fixture(scope="module")
def places(acp_places: AcpPlaces) -> tuple[Path, Path]:
    return acp_places.projects, acp_places.work


@pytest.fixture(scope="module")
def stack_settings(acp_places: AcpPlaces) -> dict[str, str]:
    return acp_places.stack_settings


def bound_agent_session(stack: Stack, places, kind: str) -> tuple[int, int, Path, str]:
    """A task bound to a fresh project, with a session on a new ``kind`` target that asks a
    person (the default policy) and talks to its own mock conversation."""
    root, _ = places
    name = f"{kind}-{secrets.token_hex(4)}"
    repo = make_repository(root / name)
    stack.manage("project_add", name, str(repo), "--user", USERNAME)
    base_url = f"{stack.mock_url}/conversations/{name}{URL_SUFFIX[kind]}"
    code = (
        "from django.contrib.auth import get_user_model\n"
        "from sessions_app.agent.registry import AGENTS\n"
        "from sessions_app.services import session_create, target_create\n"
        "from sessions_app.services.task_sessions import task_create\n"
        "from sessions_app.workspaces.models import Project\n"
        "from sessions_app.workspaces.services import worktree_ensure\n"
        f"user = get_user_model().objects.get(username={USERNAME!r})\n"
        f"project = Project.objects.get(name={name!r})\n"
        f"task = task_create(owner=user, title={name!r}, project_id=project.pk)\n"
        f"target = target_create(name={name!r}, kind='acp', agent_kind={kind!r},\n"
        f"    base_url={base_url!r}, model=AGENTS[{kind!r}].default_model)\n"
        f"session = session_create(owner=user, target=target, title={name!r}, task=task)\n"
        "print(task.pk, session.pk, worktree_ensure(task_id=task.pk))\n"
    )
    task_id, session_id, path = stack.manage("shell", "-c", code).strip().splitlines()[-1].split()
    return int(task_id), int(session_id), Path(path), name


def watch(desktop, phone, session_id: int) -> None:
    for page in (desktop, phone):
        open_session(page, session_id)


def answer_on_the_phone(desktop, phone, option_kind: str) -> str:
    """Both screens show the pending card; the phone presses the agent's ``option_kind`` option;
    the desktop's card turns into the decided line. Returns that line."""
    for page in (desktop, phone):
        page.wait_for_selector(PENDING, timeout=AGENT_WAIT_MS)
    assert phone.locator(f"{PENDING} .approval-name").inner_text().strip()
    phone.locator(f"{PENDING} button[data-kind='{option_kind}']").click()
    state = "allowed" if option_kind.startswith("allow") else "rejected"
    decided = desktop.wait_for_selector(
        f"#transcript .approval[data-state='{state}'] .approval-outcome", timeout=30_000
    )
    return decided.inner_text()


def turn_over(page) -> None:
    # Idle again: Send is back in the composer (an agent may end a refused turn without a word).
    page.wait_for_selector("#composer-actions .btn--send", timeout=AGENT_WAIT_MS)


@pytest.mark.parametrize("kind", REAL_AGENTS)
def test_an_edit_the_phone_allows_changes_the_worktree_and_the_review_shows_it(
    stack, places, desktop, phone, kind
):
    task_id, session_id, worktree, _ = bound_agent_session(stack, places, kind)
    watch(desktop, phone, session_id)

    send(desktop, "[[mock:edit:plan.md:the+agreed+plan]] write down the plan")

    line = answer_on_the_phone(desktop, phone, "allow_once")
    assert f"by {USERNAME}" in line, line
    desktop.wait_for_function(
        "() => !document.querySelector(" + repr(PENDING) + ")", timeout=AGENT_WAIT_MS
    )
    for page in (desktop, phone):
        turn_over(page)
    assert (worktree / "plan.md").read_text().strip() == "the agreed plan"
    desktop.goto(f"/tasks/{task_id}/")
    desktop.wait_for_selector("#task-review code:text-is('plan.md')", timeout=30_000)
    assert "the agreed plan" in desktop.locator("#task-review").inner_text()


@pytest.mark.parametrize("kind", REAL_AGENTS)
def test_an_edit_the_phone_rejects_leaves_the_worktree_untouched(
    stack, places, desktop, phone, kind
):
    _, session_id, worktree, _ = bound_agent_session(stack, places, kind)
    watch(desktop, phone, session_id)

    send(desktop, "[[mock:edit:plan.md:an+unwanted+plan]] write down the plan")

    line = answer_on_the_phone(desktop, phone, "reject_once")
    assert line.startswith("Rejected"), line
    for page in (desktop, phone):
        turn_over(page)
    assert not (worktree / "plan.md").exists()


@pytest.mark.parametrize("kind", REAL_AGENTS)
def test_a_529_after_an_approved_edit_is_not_retried_and_start_fresh_puts_the_file_back(
    stack, places, desktop, phone, kind
):
    _, session_id, worktree, conversation = bound_agent_session(stack, places, kind)
    watch(desktop, phone, session_id)

    send(desktop, "[[mock:edit-then-overloaded:plan.md:half+a+plan]] write down the plan")
    answer_on_the_phone(desktop, phone, "allow_once")

    for page in (desktop, phone):
        card = page.wait_for_selector("#recovery .recovery-card", timeout=AGENT_WAIT_MS)
        assert "plan.md" in card.inner_text()
        assert page.locator("#notice .notice").count() == 0  # no automatic retry, no banner
    assert (worktree / "plan.md").exists()
    sent = conversation_requests(stack, conversation)

    desktop.click("#recovery .recovery-fresh-restore")
    confirm = desktop.wait_for_selector("#recovery .recovery-confirm", timeout=30_000)
    assert "plan.md" in confirm.inner_text()
    # Nothing was sent again while the person looked: the failed prompt waits for their choice.
    assert len(conversation_requests(stack, conversation)) == len(sent)
    desktop.click("#recovery .recovery-confirm-restore")

    # Start fresh sends the person's message again, in the worktree as it was at the turn's
    # start: the agent asks for the same edit again, and until someone answers, the file is gone.
    for page in (desktop, phone):
        page.wait_for_selector(PENDING, timeout=AGENT_WAIT_MS)
    assert not (worktree / "plan.md").exists()
    desktop.locator(f"{PENDING} button[data-kind='reject_once']").click()
    phone.wait_for_selector(f"{PENDING}", state="detached", timeout=30_000)
