import logging
import os

from celery import Celery
from celery.signals import after_setup_logger, after_setup_task_logger
from django.conf import settings

from recovery.logs import JsonFormatter

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kandev_web.settings")

app = Celery("kandev_web")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@after_setup_logger.connect
@after_setup_task_logger.connect
def _structured_worker_logs(logger: logging.Logger, **_: object) -> None:
    """Celery sets up its own log handlers in a worker; give them the app's format too, so a
    worker's lines are the same JSON (turn ids, redaction) as every other process's."""
    if settings.KANDEV_LOG_FORMAT != "json":
        return
    for handler in logger.handlers:
        handler.setFormatter(JsonFormatter())
