"""A bound task's worktree, made and removed with real git: on branch kandev/task-<id> from the
commit fixed at binding, idempotent, removed on archive with its branch kept, and a clear
WorkspaceUnusable when the repository or the worktree went missing under the app."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.test import Client

from sessions_app.api_auth import api_token_create
from sessions_app.errors import StateConflict, WorkspaceUnusable
from sessions_app.models import PromptGeneration
from sessions_app.services import prompt_submit
from sessions_app.services.task_sessions import (
    session_create,
    task_archive,
    task_create,
    task_unarchive,
)
from sessions_app.workspaces.models import TaskWorkspace
from sessions_app.workspaces.selectors import task_workspace
from sessions_app.workspaces.services import worktree_ensure, worktree_remove
from tests.integration.workspaces.conftest import git
from tests.support.factories import ProviderTargetFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_unbound_task_has_no_worktree(owner, roots):
    task = task_create(owner=owner, title="Just chat")

    assert task_workspace(task_id=task.pk) is None
    assert worktree_ensure(task_id=task.pk) is None


def test_binding_fixes_the_base_commit_and_names_branch_and_path_from_the_id(
    bound_task, repo, settings
):
    workspace = task_workspace(task_id=bound_task.pk)

    assert workspace.branch == f"kandev/task-{bound_task.pk}"
    assert workspace.path == str(
        Path(settings.KANDEV_ACP_WORKDIR) / "worktrees" / f"task-{bound_task.pk}"
    )
    assert workspace.base_commit == git(repo, "rev-parse", "HEAD")
    assert workspace.state == TaskWorkspace.State.PENDING


def test_the_first_use_creates_the_worktree_on_its_branch_and_later_ones_reuse_it(bound_task, repo):
    base = git(repo, "rev-parse", "HEAD")
    (repo / "later.md").write_text("committed after binding\n")
    git(repo, "add", "later.md")
    git(repo, "commit", "-q", "-m", "later")

    path = worktree_ensure(task_id=bound_task.pk)
    (path / "work.txt").write_text("the agent's work\n")
    again = worktree_ensure(task_id=bound_task.pk)

    assert again == path
    assert (path / "README.md").read_text() == "# The project\n"
    assert not (path / "later.md").exists()  # from the commit fixed at binding
    assert (path / "work.txt").exists()
    assert git(path, "rev-parse", "--abbrev-ref", "HEAD") == f"kandev/task-{bound_task.pk}"
    assert git(path, "rev-parse", "HEAD") == base
    assert task_workspace(task_id=bound_task.pk).state == TaskWorkspace.State.READY
    assert git(repo, "status", "--porcelain") == ""  # the main checkout untouched


def test_archiving_removes_the_worktree_and_keeps_the_branch(bound_task, repo):
    path = worktree_ensure(task_id=bound_task.pk)
    (path / "dirty.txt").write_text("uncommitted\n")

    task_archive(task=bound_task)

    workspace = task_workspace(task_id=bound_task.pk)
    assert not path.exists()
    assert workspace.state == TaskWorkspace.State.REMOVED
    assert workspace.removed_at is not None
    assert git(repo, "branch", "--list", f"kandev/task-{bound_task.pk}") != ""
    assert str(path) not in git(repo, "worktree", "list")


def test_a_task_back_from_the_archive_gets_its_worktree_again_on_the_kept_branch(bound_task, repo):
    worktree_ensure(task_id=bound_task.pk)
    task_archive(task=bound_task)

    task_unarchive(task=bound_task)
    path = worktree_ensure(task_id=bound_task.pk)

    assert (path / "README.md").exists()
    assert git(path, "rev-parse", "--abbrev-ref", "HEAD") == f"kandev/task-{bound_task.pk}"


def test_removing_twice_or_an_unbound_task_is_harmless(bound_task, owner):
    worktree_ensure(task_id=bound_task.pk)
    worktree_remove(task_id=bound_task.pk)
    worktree_remove(task_id=bound_task.pk)
    worktree_remove(task_id=task_create(owner=owner, title="plain").pk)


def test_a_deleted_repository_makes_the_next_use_a_clear_refusal(bound_task, repo):
    worktree_ensure(task_id=bound_task.pk)
    shutil.rmtree(repo)

    with pytest.raises(WorkspaceUnusable) as caught:
        worktree_ensure(task_id=bound_task.pk)

    assert caught.value.code == "workspace_repository_missing"
    assert task_workspace(task_id=bound_task.pk).state == TaskWorkspace.State.BROKEN


def test_a_worktree_deleted_under_the_app_makes_the_next_use_a_clear_refusal(bound_task):
    path = worktree_ensure(task_id=bound_task.pk)
    shutil.rmtree(path)

    with pytest.raises(WorkspaceUnusable) as caught:
        worktree_ensure(task_id=bound_task.pk)

    assert caught.value.code == "workspace_worktree_missing"
    assert "deleted" in caught.value.detail


def test_a_worktree_replaced_by_a_symlink_is_refused(bound_task, tmp_path):
    path = worktree_ensure(task_id=bound_task.pk)
    shutil.rmtree(path)
    (tmp_path / "elsewhere").mkdir()
    path.symlink_to(tmp_path / "elsewhere")

    with pytest.raises(WorkspaceUnusable):
        worktree_ensure(task_id=bound_task.pk)


def test_a_repository_moved_out_of_the_roots_is_refused(bound_task, settings, tmp_path):
    worktree_ensure(task_id=bound_task.pk)
    settings.KANDEV_PROJECT_ROOTS = (str(tmp_path / "other-root"),)

    with pytest.raises(WorkspaceUnusable) as caught:
        worktree_ensure(task_id=bound_task.pk)

    assert caught.value.code == "workspace_repository_missing"


def test_archiving_is_refused_while_an_agent_works_in_the_worktree(bound_task, repo, owner):
    path = worktree_ensure(task_id=bound_task.pk)
    session = session_create(
        owner=owner, target=ProviderTargetFactory(), title="Busy", task=bound_task
    )
    generation = prompt_submit(session=session, user=owner, text="keep working")

    with pytest.raises(StateConflict, match="while an agent is working"):
        task_archive(task=bound_task)
    page = page_client(owner).post(f"/tasks/{bound_task.pk}/archive/")

    assert page.status_code == 409
    assert "Archiving cannot happen while an agent is working" in page.content.decode()
    assert path.exists()
    bound_task.refresh_from_db()
    assert bound_task.archived_at is None
    # Once the prompt is over, archiving goes ahead.
    PromptGeneration.objects.filter(pk=generation.pk).update(state=PromptGeneration.State.STOPPED)
    task_archive(task=bound_task)
    assert not path.exists()


def page_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_api_answers_archiving_a_busy_task_with_409(bound_task, owner):
    session = session_create(
        owner=owner, target=ProviderTargetFactory(), title="Busy", task=bound_task
    )
    prompt_submit(session=session, user=owner, text="keep working")
    client = Client(headers={"authorization": f"Bearer {api_token_create(user=owner)}"})

    response = client.patch(
        f"/api/v1/tasks/{bound_task.pk}", data={"archived": True}, content_type="application/json"
    )

    assert response.status_code == 409
    assert "while an agent is working" in response.json()["detail"]
