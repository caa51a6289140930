from django.apps import AppConfig


class ApprovalsConfig(AppConfig):
    name = "sessions_app.approvals"
    label = "approvals"
    verbose_name = "Approvals"
