import importlib
import os

from django.apps import AppConfig
from django.conf import settings

from recovery.redact import worker_values_set


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Sessions"

    def ready(self) -> None:
        # Connects the login receivers; it imports models, so not before the app is ready.
        importlib.import_module("sessions_app.signals")

        # Every redaction in this process removes the values of the provider keys configured for
        # it, whatever their shape: output, thinking, tool calls and results, errors, logs.
        worker_values_set(os.environ.get(name, "") for name in settings.KANDEV_PROVIDER_KEY_ENVS)
