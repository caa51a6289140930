"""A real turn of the mock ACP agent, confined in bubblewrap, in a task bound to a project: the
agent's working directory is the task's worktree (it reads a file committed in the project),
its first turn creates the worktree, and a repository or worktree gone under the app ends the
next turn with a clear card instead of a crash."""

from __future__ import annotations

import shutil

import pytest

from sessions_app.models import PromptGeneration
from sessions_app.services.task_sessions import session_create
from sessions_app.workspaces.models import TaskWorkspace
from sessions_app.workspaces.selectors import task_workspace
from sessions_app.workspaces.wording import REPOSITORY_GONE, WORKTREE_GONE
from tests.integration.acp_app.conftest import run_prompt
from tests.integration.workspaces.conftest import git, make_repository

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def repo(roots, agent_state):
    # agent_state (autouse) set the work directory; the worktrees go under it.
    return make_repository(
        roots / "app", {"README.md": "# The project\n", "PLAN.md": "ship the bound worktree\n"}
    )


@pytest.fixture
def bound_chat(owner, acp_target, project):
    return session_create(owner=owner, target=acp_target, title="Bound", project_id=project.pk)


def test_the_agent_runs_in_its_tasks_worktree_and_reads_the_projects_file(
    bound_chat, owner, clock, settings
):
    assert settings.KANDEV_AGENT_SANDBOX != "off"

    generation = run_prompt(bound_chat, owner, "/read-file PLAN.md", clock)

    assert generation.state == PromptGeneration.State.SUCCEEDED, generation.error_message
    answer = bound_chat.messages.filter(role="assistant").order_by("-id").first()
    assert "ship the bound worktree" in answer.full_text
    workspace = task_workspace(task_id=bound_chat.task_id)
    assert workspace.state == TaskWorkspace.State.READY
    assert git(workspace.path, "rev-parse", "--abbrev-ref", "HEAD") == workspace.branch


def test_an_unbound_session_still_gets_an_empty_private_folder(owner, acp_target, clock, roots):
    chat = session_create(owner=owner, target=acp_target, title="Unbound")
    make_repository(roots / "app", {"PLAN.md": "not for you\n"})

    generation = run_prompt(chat, owner, "/read-file PLAN.md", clock)

    answer = chat.messages.filter(role="assistant").order_by("-id").first()
    assert generation.state == PromptGeneration.State.SUCCEEDED
    assert "could not read PLAN.md" in answer.full_text


def test_a_deleted_repository_ends_the_next_turn_with_a_card(bound_chat, owner, clock, repo):
    run_prompt(bound_chat, owner, "/read-file PLAN.md", clock)
    shutil.rmtree(repo)

    generation = run_prompt(bound_chat, owner, "hello again", clock)

    assert generation.state == PromptGeneration.State.FAILED
    assert generation.error_code == "workspace_repository_missing"
    bound_chat.refresh_from_db()
    assert bound_chat.state == "needs_attention"
    assert REPOSITORY_GONE in generation.error_message


def test_a_worktree_deleted_under_the_app_ends_the_next_turn_with_a_card(bound_chat, owner, clock):
    run_prompt(bound_chat, owner, "/read-file PLAN.md", clock)
    shutil.rmtree(task_workspace(task_id=bound_chat.task_id).path)

    generation = run_prompt(bound_chat, owner, "hello again", clock)

    assert generation.state == PromptGeneration.State.FAILED
    assert generation.error_code == "workspace_worktree_missing"
    assert WORKTREE_GONE in generation.error_message
