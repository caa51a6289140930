"""Projects (operator-registered git repositories) and each bound task's worktree."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models

from sessions_app.models import Task


class Project(models.Model):
    """A local git repository staff registered under one of KANDEV_PROJECT_ROOTS. ``repo_path``
    is stored resolved (symlinks followed) and checked again on every use, so a root narrowed or
    a symlink planted later never widens what a task reaches."""

    name = models.CharField(max_length=100, unique=True)
    repo_path = models.CharField(max_length=1000)
    # A full ref (refs/heads/main) or a commit; resolved to a commit when a task is bound.
    base_ref = models.CharField(max_length=255)
    allowed_users = models.ManyToManyField(
        settings.AUTH_USER_MODEL, related_name="projects", blank=True
    )
    allowed_groups = models.ManyToManyField(Group, related_name="projects", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class TaskWorkspace(models.Model):
    """A task's binding to a project and the worktree its agents run in. The branch and path
    are derived from the task id, never from anything a person typed."""

    class State(models.TextChoices):
        PENDING = "pending", "Not created yet"
        READY = "ready", "Ready"
        REMOVED = "removed", "Removed"
        BROKEN = "broken", "Broken"

    task = models.OneToOneField(Task, on_delete=models.CASCADE, related_name="workspace")
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="workspaces")
    branch = models.CharField(max_length=100)
    path = models.CharField(max_length=1000)
    base_commit = models.CharField(max_length=64)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)
    removed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.branch
