"""settings.LOGGING: one line per record on stderr, JSON with request and turn ids and secrets
redacted (recovery/logs.py) or plain for a person reading a terminal, with the project's filters
(kandev_web/logfilters.py, recovery/providers/acp/sdk_logs.py) in place."""

from __future__ import annotations

from collections.abc import Iterable

from kandev_web.logfilters import QUIET_LOGGERS

LOG_FORMATS = ("json", "plain")


def logging_config(*, log_format: str, level: str, periodic_tasks: Iterable[str]) -> dict:
    """Django's LOGGING dict; ``periodic_tasks`` are the beat schedule's task names, whose idle
    runs log at DEBUG."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
            "json": {"()": "recovery.logs.JsonFormatter"},
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": log_format,
                "filters": ["short_security_warnings"],
            }
        },
        # The ACP SDK logs on the root logger itself; see the filter's docstring for what it drops.
        "filters": {
            "acp_sdk_noise": {"()": "recovery.providers.acp.sdk_logs.DropUnparsedUpdates"},
            # A suspicious request (answered 400) is one warning line, no traceback.
            "short_security_warnings": {"()": "kandev_web.logfilters.ShortSecurityWarnings"},
            # Idle sweeps (nothing found) log at DEBUG: see kandev_web/logfilters.py.
            "quiet_sweeps": {
                "()": "kandev_web.logfilters.QuietPeriodicTasks",
                "task_names": list(periodic_tasks),
            },
        },
        "root": {"handlers": ["console"], "level": level, "filters": ["acp_sdk_noise"]},
        "loggers": {
            "django.channels.server": {"level": "WARNING"},
            **{name: {"filters": ["quiet_sweeps"]} for name in QUIET_LOGGERS},
        },
    }
