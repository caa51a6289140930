"""Keep one kind of SDK noise out of the logs, and only that kind.

The ACP SDK validates every ``session/update`` before dispatching it to the client's handler and
logs a full traceback on the root logger when a frame does not fit its schema (Claude Code sends
``usage_update`` with ``used: null`` on every prompt). Our adapter never uses that dispatch: it
converts updates from the raw frames it observes first (``run.py``), so such a frame is read
anyway and the traceback says nothing. Every other SDK error is logged as before.
"""

from __future__ import annotations

import logging

from pydantic import ValidationError

_UNPARSED_UPDATE = "Unhandled error while handling notification method=%s"


class DropUnparsedUpdates(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (
            record.msg == _UNPARSED_UPDATE
            and record.args == ("session/update",)
            and isinstance(error, ValidationError)
        )
