"""Logging filters of the project's own processes (wired in settings.LOGGING).

Idle, beat sends a periodic sweep every few seconds and the worker logs receiving and finishing
each: about 30 lines a minute, enough to scroll `make run`'s URL and login away. A sweep that
found nothing to do is debug-level news; one that acted (its task returned a non-zero count) and
everything else keeps its level.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

# Celery's own messages, by the logger that emits them.
_BEAT_LOGGER = "celery.beat"  # "Scheduler: Sending due task %s (%s)", args (entry name, task)
_RECEIVED_LOGGER = "celery.worker.strategy"  # "Task %(name)s[%(id)s] received", args dict
_TRACE_LOGGER = "celery.app.trace"  # "Task %(name)s[%(id)s] succeeded in ...: %(return_value)s"
QUIET_LOGGERS = (_BEAT_LOGGER, _RECEIVED_LOGGER, _TRACE_LOGGER)
# What a sweep that did nothing returns, as Celery's trace line spells the return value.
_NOTHING_DONE = frozenset({"0", "None", "[]"})


class QuietPeriodicTasks(logging.Filter):
    """Demote to DEBUG the lines of periodic tasks that did nothing; drop them unless DEBUG is on.

    Attach to the loggers in ``QUIET_LOGGERS``. ``task_names`` are the periodic tasks (the
    values of CELERY_BEAT_SCHEDULE's "task").
    """

    def __init__(self, task_names: Iterable[str] = ()) -> None:
        super().__init__()
        self.task_names = frozenset(task_names)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or not self._is_idle_sweep(record):
            return True
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return logging.getLogger().isEnabledFor(logging.DEBUG)

    def _is_idle_sweep(self, record: logging.LogRecord) -> bool:
        args = record.args
        if record.name == _BEAT_LOGGER:
            return isinstance(args, tuple) and len(args) >= 2 and args[1] in self.task_names
        if not isinstance(args, dict) or args.get("name") not in self.task_names:
            return False
        if record.name == _RECEIVED_LOGGER:
            return True
        # Failures and retries keep their lines; only a success that returned "nothing" goes.
        return "return_value" in args and str(args["return_value"]) in _NOTHING_DONE


class ShortSecurityWarnings(logging.Filter):
    """A request Django refused as suspicious (``django.security.*``: a static path climbing out
    of its directory, a bad Host header, a multipart body over the limits) is the client's
    doing, answered 400: one warning line, never the error and traceback Django attaches, which
    let any anonymous client write kilobytes of log per request. Attach to the handlers (a filter
    on the "django.security" logger would not see its children's records)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "django.security" or record.name.startswith("django.security."):
            record.exc_info = None
            record.exc_text = None
            record.stack_info = None
            if record.levelno > logging.WARNING:
                record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True
