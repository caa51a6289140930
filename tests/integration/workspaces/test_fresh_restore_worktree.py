"""Start fresh puts back the task's worktree, where a bound task's agent really works (not the
private folder an unbound session gets): the real mock agent, confined, edits a committed file
and fails; the restore leaves the worktree exactly at its branch's state."""

from __future__ import annotations

import pytest

from sessions_app.effects.services import fresh_restore_plan
from sessions_app.models import PromptGeneration
from sessions_app.services.prompts import session_recover
from sessions_app.services.task_sessions import session_create
from sessions_app.workspaces.selectors import task_workspace
from tests.integration.acp_app.conftest import run_prompt
from tests.integration.workspaces.conftest import git, make_repository

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def repo(roots, agent_state):
    return make_repository(roots / "app", {"README.md": "# The project\n", "notes.md": "notes\n"})


def test_start_fresh_puts_the_tasks_worktree_back(owner, acp_target, project, clock):
    chat = session_create(owner=owner, target=acp_target, title="Bound", project_id=project.pk)

    generation = run_prompt(chat, owner, "/write-then-fail:1 notes.md tidy up", clock)

    assert generation.state == PromptGeneration.State.FAILED, generation.error_message
    worktree = task_workspace(task_id=chat.task_id).path
    assert git(worktree, "status", "--porcelain") == "M notes.md"
    plan = fresh_restore_plan(session_id=chat.pk)
    assert plan is not None and plan.revert == ("notes.md",)

    session_recover(session=chat, user=owner, action="fresh", restore=True)

    assert git(worktree, "status", "--porcelain") == ""
