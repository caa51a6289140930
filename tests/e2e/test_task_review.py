"""A bound task's page reviews its worktree, and the review follows without a reload: when one
of the task's turns ends (the board's socket says so), the files written meanwhile appear."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import USERNAME, AcpPlaces, Stack
from tests.integration.workspaces.conftest import make_repository

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def places(acp_places: AcpPlaces) -> tuple[Path, Path]:
    return acp_places.projects, acp_places.work


@pytest.fixture(scope="module")
def stack_settings(acp_places: AcpPlaces) -> dict[str, str]:
    return acp_places.stack_settings


def bound_session(stack: Stack, repo: Path) -> tuple[int, int, Path]:
    stack.manage("project_add", "app", str(repo), "--user", USERNAME)
    code = (
        "from django.contrib.auth import get_user_model\n"
        "from sessions_app.models import ProviderTarget\n"
        "from sessions_app.services import session_create\n"
        "from sessions_app.services.task_sessions import task_create\n"
        "from sessions_app.workspaces.models import Project\n"
        "from sessions_app.workspaces.services import worktree_ensure\n"
        f"user = get_user_model().objects.get(username={USERNAME!r})\n"
        "task = task_create(owner=user, title='Reviewed', project_id=Project.objects.get().pk)\n"
        "target = ProviderTarget.objects.get(name='Mock')\n"
        "session = session_create(owner=user, target=target, title='Reviewed', task=task)\n"
        "print(task.pk, session.pk, worktree_ensure(task_id=task.pk))\n"
    )
    task_id, session_id, path = stack.manage("shell", "-c", code).strip().splitlines()[-1].split()
    return int(task_id), int(session_id), Path(path)


def test_the_review_shows_files_written_during_a_turn_when_the_turn_ends(stack, desktop, places):
    root, _ = places
    repo = make_repository(root / "app")
    task_id, session_id, worktree = bound_session(stack, repo)
    desktop.goto(f"/tasks/{task_id}/")
    desktop.wait_for_function(
        "() => window.kandevLive.socket && window.kandevLive.socket.readyState === 1"
    )
    desktop.wait_for_selector("#task-review >> text=No changes yet.")

    (worktree / "written.txt").write_text("by the agent\n")
    session_page = desktop.context.new_page()
    session_page.goto(f"/sessions/{session_id}/")
    session_page.wait_for_function(
        "() => window.kandevLive.socket && window.kandevLive.socket.readyState === 1"
    )
    session_page.fill("#composer-text", "hello")
    session_page.click("#composer-actions button")

    desktop.wait_for_selector("#task-review code:text-is('written.txt')", timeout=60_000)
    assert "+1" in desktop.locator("#task-review summary").first.inner_text()
