"""Daphne's access log without query-string values.

Daphne's command line writes one NCSA-style line per request (``daphne.access.AccessLogGenerator``,
to stdout at the default verbosity) with the request's whole URI: a ``?token=...`` reached the
log as sent. Here every parameter keeps its name (useful when reading a log) and loses its value.

``access_log_redacted()`` is called by kandev_web/asgi.py, which Daphne's command line imports
before it builds its access logger (the same hook as kandev_web/daphne_websocket_close_codes.py),
so every way of starting Daphne on this app gets it. In a process Daphne does not serve, nothing
is patched.
"""

from __future__ import annotations

import sys
from typing import Any

from recovery.redact import REDACTED


def uri_redacted(uri: str) -> str:
    """``uri`` with the value of every query parameter replaced (names and the path stay)."""
    path, mark, query = uri.partition("?")
    if not mark:
        return uri
    fragments = []
    for part in query.split("&"):
        name, equals, _ = part.partition("=")
        fragments.append(f"{name}={REDACTED}" if equals else (REDACTED if name else ""))
    return f"{path}?{'&'.join(fragments)}"


def access_log_redacted() -> None:
    # Daphne ships no type hints: its module is patched and its class subclassed as Any.
    daphne_cli: Any = sys.modules.get("daphne.cli")
    if daphne_cli is None:
        return
    base: Any = daphne_cli.AccessLogGenerator
    if getattr(base, "redacts_query_strings", False):
        return

    class AccessLogGenerator(base):
        redacts_query_strings = True

        def __call__(self, protocol: str, action: str, details: dict[str, Any]) -> None:
            if isinstance(details.get("path"), str):
                details = {**details, "path": uri_redacted(details["path"])}
            super().__call__(protocol, action, details)

    daphne_cli.AccessLogGenerator = AccessLogGenerator
