"""Projects registered and task worktrees created and removed, with real git on the host.

A task bound to a project has one worktree, ``KANDEV_ACP_WORKDIR/worktrees/task-<id>`` on branch
``kandev/task-<id>``, made from the commit the project's base named when the task was bound. It
is created by the first turn (``worktree_ensure``) and removed, keeping the branch, when the task
is archived (``worktree_remove``). A repository or worktree that went missing under the app makes
``worktree_ensure`` raise WorkspaceUnusable, which the turn shows as a card.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterable
from pathlib import Path

from django.contrib.auth.models import Group, User
from django.db import transaction
from django.utils import timezone

from sessions_app.errors import InvalidInput, StateConflict, UnknownReference, WorkspaceUnusable
from sessions_app.models import Task
from sessions_app.workspaces import wording
from sessions_app.workspaces.git import GitFailed, GitPlace, git_run, git_text
from sessions_app.workspaces.models import Project, TaskWorkspace
from sessions_app.workspaces.places import (
    PlaceRefused,
    Repository,
    admin_dir_for,
    branch_for,
    commit_of,
    default_ref,
    ref_checked,
    repository_checked,
    worktree_path_for,
    worktrees_root,
)
from sessions_app.workspaces.selectors import project_usable

logger = logging.getLogger(__name__)
State = TaskWorkspace.State

REPOSITORY_MISSING = "workspace_repository_missing"
WORKTREE_MISSING = "workspace_worktree_missing"
WORKTREE_REMOVED = "workspace_removed"


def project_register(
    *,
    name: str,
    repo_path: str,
    base: str | None = None,
    users: Iterable[User] = (),
    groups: Iterable[Group] = (),
) -> Project:
    """Register the repository at ``repo_path`` (inside KANDEV_PROJECT_ROOTS) as project
    ``name``, starting tasks from ``base`` (default: the branch its HEAD names). InvalidInput
    names the field that is wrong; StateConflict for a name already taken."""
    name = name.strip()
    if not name or "\x00" in name:
        raise InvalidInput("name", "a project needs a name")
    try:
        repository = repository_checked(repo_path)
    except PlaceRefused as refused:
        raise InvalidInput("repo_path", refused.message) from None
    try:
        base_ref = default_ref(repository) if base is None else ref_checked(repository, base)
    except PlaceRefused as refused:
        raise InvalidInput("base_ref", refused.message) from None
    with transaction.atomic():
        if Project.objects.filter(name=name).exists():
            raise StateConflict("name", "a project with this name exists")
        project = Project.objects.create(
            name=name, repo_path=str(repository.checkout), base_ref=base_ref
        )
        project.allowed_users.set(users)
        project.allowed_groups.set(groups)
    return project


def task_workspace_bind(*, task: Task, user: User, project_id: int) -> TaskWorkspace:
    """Bind a new task to a project ``user`` may use, fixing the commit its worktree starts
    from. UnknownReference alike for an unknown project and one the user may not use."""
    project = project_usable(user=user, project_id=project_id)
    if project is None:
        raise UnknownReference("project", wording.PROJECT_UNKNOWN)
    try:
        repository = _repository(project)
    except WorkspaceUnusable:
        raise StateConflict("project", wording.PROJECT_UNAVAILABLE) from None
    base_commit = commit_of(repository, project.base_ref)
    if base_commit is None:
        raise StateConflict("project", wording.PROJECT_UNAVAILABLE)
    return TaskWorkspace.objects.create(
        task=task,
        project=project,
        branch=branch_for(task.pk),
        path=str(worktree_path_for(task.pk)),
        base_commit=base_commit,
    )


def worktree_ensure(*, task_id: int) -> Path | None:
    """The task's worktree on this machine, created on first use; None for an unbound task.
    Raises WorkspaceUnusable when the repository or the worktree is gone or broken (and marks
    the worktree broken), or when it was removed with its archived task."""
    try:
        return _worktree_ensure(task_id)
    except WorkspaceUnusable as unusable:
        if unusable.code != WORKTREE_REMOVED:
            TaskWorkspace.objects.filter(task_id=task_id).exclude(state=State.REMOVED).update(
                state=State.BROKEN
            )
        raise


def _worktree_ensure(task_id: int) -> Path | None:
    with transaction.atomic():
        # Locked while git makes the worktree, so two first turns never both add it.
        workspace = (
            TaskWorkspace.objects.select_for_update(no_key=True)
            .select_related("project")
            .filter(task_id=task_id)
            .first()
        )
        if workspace is None:
            return None
        if workspace.state == State.REMOVED:
            raise WorkspaceUnusable(WORKTREE_REMOVED, wording.WORKTREE_REMOVED)
        repository = _repository(workspace.project)
        path = worktree_path_for(task_id)
        if workspace.state == State.PENDING:
            _worktree_add(repository, workspace=workspace, path=path)
            TaskWorkspace.objects.filter(pk=workspace.pk).update(state=State.READY)
            return path
    if not _worktree_intact(repository, task_id=task_id, path=path):
        raise WorkspaceUnusable(WORKTREE_MISSING, wording.WORKTREE_GONE)
    if workspace.state == State.BROKEN:
        # Restored by an operator: usable again.
        TaskWorkspace.objects.filter(pk=workspace.pk).update(state=State.READY)
    return path


def worktree_git_dir(*, task_id: int) -> Path:
    """The git directory of the task's repository, which the agent's sandbox binds read-only
    (its worktree's ``.git`` file names a folder inside it). WorkspaceUnusable if it is gone."""
    workspace = TaskWorkspace.objects.select_related("project").get(task_id=task_id)
    return _repository(workspace.project).git_dir


def worktree_remove(*, task_id: int) -> None:
    """Remove the task's worktree (``git worktree remove --force``, then ``prune``); its branch
    and commits stay in the repository. A no-op for an unbound task or a removed worktree."""
    workspace = TaskWorkspace.objects.select_related("project").filter(task_id=task_id).first()
    if workspace is None or workspace.state == State.REMOVED:
        return
    path = worktree_path_for(task_id)
    try:
        repository: Repository | None = _repository(workspace.project)
    except WorkspaceUnusable:
        repository = None
    if repository is not None and path.exists():
        try:
            git_run(repository.place, ["worktree", "remove", "--force", "--", str(path)])
        except GitFailed as failed:
            logger.warning("worktree of task %s not removed by git: %s", task_id, failed.detail)
    if path.exists() and path.is_relative_to(worktrees_root()) and not path.is_symlink():
        shutil.rmtree(path)
    if repository is not None:
        try:
            git_run(repository.place, ["worktree", "prune"])
        except GitFailed as failed:
            logger.warning("worktrees of project %s not pruned: %s", repository, failed.detail)
    TaskWorkspace.objects.filter(pk=workspace.pk).update(
        state=State.REMOVED, removed_at=timezone.now()
    )


def worktree_reopen(*, task_id: int) -> None:
    """A task brought back from the archive: its next turn makes its worktree again, on the
    branch it kept."""
    TaskWorkspace.objects.filter(task_id=task_id, state=State.REMOVED).update(
        state=State.PENDING, removed_at=None
    )


def _repository(project: Project) -> Repository:
    try:
        return repository_checked(project.repo_path)
    except PlaceRefused as refused:
        logger.warning("project %r unusable: %s", project.name, refused.message)
        raise WorkspaceUnusable(REPOSITORY_MISSING, wording.REPOSITORY_GONE) from None


def _worktree_add(repository: Repository, *, workspace: TaskWorkspace, path: Path) -> None:
    task_id = workspace.task_id
    branch = branch_for(task_id)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if _worktree_intact(repository, task_id=task_id, path=path):
        return  # made by an earlier call that did not get to mark it ready
    try:
        # A stale admin folder (its worktree gone) would make git pick another name.
        git_run(repository.place, ["worktree", "prune"])
        if path.exists():
            raise WorkspaceUnusable(WORKTREE_MISSING, wording.WORKTREE_GONE)
        if commit_of(repository, f"refs/heads/{branch}") is None:
            args = ["worktree", "add", "-b", branch, "--", str(path), workspace.base_commit]
        else:
            args = ["worktree", "add", "--", str(path), branch]
        git_run(repository.place, args)
    except GitFailed as failed:
        logger.warning("worktree of task %s not created: %s", task_id, failed.detail)
        raise WorkspaceUnusable(REPOSITORY_MISSING, wording.REPOSITORY_GONE) from None


def worktree_place(repository: Repository, *, task_id: int) -> GitPlace:
    """Git calls about the task's worktree: its admin folder (which the agent cannot write) as
    the git directory, never the ``.git`` file in the worktree (which it can)."""
    return GitPlace(
        git_dir=admin_dir_for(repository, task_id), work_tree=worktree_path_for(task_id)
    )


def _worktree_intact(repository: Repository, *, task_id: int, path: Path) -> bool:
    admin = admin_dir_for(repository, task_id)
    if not path.is_dir() or path.is_symlink() or not admin.is_dir():
        return False
    try:
        points_at = (admin / "gitdir").read_text().strip()
    except OSError:
        return False
    if Path(points_at) != path / ".git":
        return False
    try:
        git_text(worktree_place(repository, task_id=task_id), ["rev-parse", "--verify", "HEAD"])
    except GitFailed:
        return False
    return True
