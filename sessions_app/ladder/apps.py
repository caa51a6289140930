from django.apps import AppConfig


class LadderConfig(AppConfig):
    name = "sessions_app.ladder"
    label = "ladder"
    verbose_name = "Recovery ladder"
