from django.apps import AppConfig


class EffectsConfig(AppConfig):
    name = "sessions_app.effects"
    label = "effects"
    verbose_name = "Workspace effects"
