from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "sessions_app.workspaces"
    label = "workspaces"
    verbose_name = "Projects and worktrees"
