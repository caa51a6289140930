from django.apps import AppConfig


class LadderConfig(AppConfig):
    name = "recovery.django"
    label = "ladder"
    verbose_name = "Recovery ladder"
