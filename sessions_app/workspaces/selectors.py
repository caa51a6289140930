"""Reads of projects and task worktrees."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet

from sessions_app.workspaces.models import Project, TaskWorkspace


def task_workspace(*, task_id: int) -> TaskWorkspace | None:
    """The task's binding to a project (and its worktree), or None for an unbound task."""
    return TaskWorkspace.objects.select_related("project").filter(task_id=task_id).first()


def task_projects(*, task_ids: Iterable[int]) -> dict[int, int]:
    """Task id -> the id of the project it is bound to, for the bound ones among ``task_ids``."""
    rows = TaskWorkspace.objects.filter(task_id__in=list(task_ids))
    return dict(rows.values_list("task_id", "project_id"))


def projects_usable(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Project]:
    """The projects ``user`` may bind a task to: listed by name or through one of their groups.
    Staff are not exempt: who works on which repository is the operator's explicit choice."""
    if not user.is_authenticated:
        return Project.objects.none()
    return (
        Project.objects.filter(Q(allowed_users=user) | Q(allowed_groups__user=user))
        .distinct()
        .order_by("name")
    )


def project_usable(*, user: AbstractBaseUser | AnonymousUser, project_id: int) -> Project | None:
    """The project if ``user`` may use it; None alike for an unknown and a forbidden one."""
    return projects_usable(user=user).filter(pk=project_id).first()
