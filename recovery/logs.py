"""Structured logs: one JSON object per line, with the turn and request it belongs to, redacted.

The ids travel in context variables, so every log line written while a request is handled or a
turn runs carries them without being passed around: ``bound(request_id=...)`` around a request,
``bound(turn_id=...)`` around a turn. The formatter redacts the whole rendered line (message,
arguments and traceback) through the credential tier, so a key that reaches a log call by mistake
never reaches the log.

    LOGGING = {"formatters": {"json": {"()": "recovery.logs.JsonFormatter"}}, ...}
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime

from recovery.redact import redact_credentials

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")
turn_id: contextvars.ContextVar[str] = contextvars.ContextVar("turn_id", default="")
_VARS = {"request_id": request_id, "turn_id": turn_id}


@contextlib.contextmanager
def bound(**ids: str) -> Iterator[None]:
    """Log lines written inside the block carry these ids (request_id, turn_id)."""
    tokens = [(_VARS[name], _VARS[name].set(str(value))) for name, value in ids.items()]
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "ts": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": redact_credentials(record.getMessage()),
        }
        for name, var in _VARS.items():
            value = var.get()
            if value:
                line[name] = value
        if record.exc_info:
            line["exc"] = redact_credentials(self.formatException(record.exc_info))
        if record.stack_info:
            line["stack"] = redact_credentials(self.formatStack(record.stack_info))
        return json.dumps(line, ensure_ascii=False, separators=(",", ":"))
