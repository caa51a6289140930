"""Projects and worktrees in the admin. Staff register a project here or with ``manage.py
project_add``; both go through the same checks (a repository inside KANDEV_PROJECT_ROOTS, a base
that is a real ref), and the path is stored resolved. The repository and base of a project that
tasks are bound to cannot change under them. Worktrees are read-only: they are the app's own."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from sessions_app.workspaces.models import Project, TaskWorkspace
from sessions_app.workspaces.places import (
    PlaceRefused,
    default_ref,
    ref_checked,
    repository_checked,
)

# Counting a worktree's size stops here, so one huge tree never stalls the admin.
_SIZE_FILES_MAX = 20_000


class ProjectForm(forms.ModelForm):
    base_ref = forms.CharField(
        required=False, max_length=255, help_text="Empty: the branch the repository's HEAD names."
    )

    class Meta:
        model = Project
        fields = ["name", "repo_path", "base_ref", "allowed_users", "allowed_groups"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        path = cleaned.get("repo_path")
        if not path:
            return cleaned
        try:
            repository = repository_checked(path)
        except PlaceRefused as refused:
            self.add_error("repo_path", refused.message)
            return cleaned
        cleaned["repo_path"] = str(repository.checkout)
        base = cleaned.get("base_ref") or ""
        try:
            cleaned["base_ref"] = ref_checked(repository, base) if base else default_ref(repository)
        except PlaceRefused as refused:
            self.add_error("base_ref", refused.message)
        return cleaned


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    form = ProjectForm
    list_display = ("name", "repo_path", "base_ref", "created_at")
    search_fields = ("name", "repo_path")
    filter_horizontal = ("allowed_users", "allowed_groups")

    def get_readonly_fields(self, request: HttpRequest, obj: Project | None = None) -> Any:
        if obj is not None and obj.workspaces.exists():
            return ("repo_path", "base_ref", "created_at")
        return ("created_at",)


def tree_size(path: str) -> str:
    """A worktree's size on disk, as people read it; '-' when it is not there."""
    root = Path(path)
    if not root.is_dir() or root.is_symlink():
        return "-"
    total, files = 0, 0
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = [name for name in dirs if name != ".git"]
        for name in names:
            files += 1
            if files > _SIZE_FILES_MAX:
                return f"over {_human_bytes(total)}"
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                continue
    return _human_bytes(total)


def _human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


@admin.register(TaskWorkspace)
class TaskWorkspaceAdmin(admin.ModelAdmin):
    list_display = ("task", "project", "branch", "path", "state", "size", "created_at")
    list_filter = ("state", "project")
    list_select_related = ("task", "project")
    search_fields = ("branch", "task__title")
    readonly_fields = (
        "task",
        "project",
        "branch",
        "path",
        "base_commit",
        "state",
        "size",
        "created_at",
        "removed_at",
    )

    @admin.display(description="Size on disk")
    def size(self, workspace: TaskWorkspace) -> str:
        return tree_size(workspace.path)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
