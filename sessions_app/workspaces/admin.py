"""Projects editable by staff (the repository checked like project_add checks it); worktrees
read-only, with their size on disk."""

from __future__ import annotations

import os
from pathlib import Path

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


class ProjectForm(forms.ModelForm):
    base_ref = forms.CharField(required=False, help_text="Empty: the repository's default branch.")

    class Meta:
        model = Project
        fields = ["name", "repo_path", "base_ref", "allowed_users", "allowed_groups"]

    def clean(self) -> dict:
        data = super().clean() or {}
        try:
            repository = repository_checked(data.get("repo_path") or "")
        except PlaceRefused as refused:
            self.add_error("repo_path", refused.message)
            return data
        data["repo_path"] = str(repository.checkout)
        try:
            base = data.get("base_ref")
            data["base_ref"] = ref_checked(repository, base) if base else default_ref(repository)
        except PlaceRefused as refused:
            self.add_error("base_ref", refused.message)
        return data


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    form = ProjectForm
    list_display = ("name", "repo_path", "base_ref", "created_at")
    filter_horizontal = ("allowed_users", "allowed_groups")
    search_fields = ("name", "repo_path")


@admin.register(TaskWorkspace)
class TaskWorkspaceAdmin(admin.ModelAdmin):
    list_display = ("task", "project", "branch", "path", "size_on_disk", "state", "created_at")
    list_select_related = ("task", "project")
    list_filter = ("state",)
    readonly_fields = (
        "task", "project", "branch", "path", "base_commit", "state", "created_at", "removed_at",
    )  # fmt: skip

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    @admin.display(description="size on disk")
    def size_on_disk(self, workspace: TaskWorkspace) -> str:
        total = 0
        # Not following symlinks: the agent may have planted some pointing anywhere.
        for folder, _, files in os.walk(workspace.path, followlinks=False):
            for name in files:
                path = Path(folder, name)
                if not path.is_symlink():
                    total += path.stat().st_size
        return f"{total / 1024:.0f} KiB" if total else "—"
