"""Response bodies recorded from real providers, which the mock sends as-is: the decoding cases
no scenario renders (wire_fixtures/NAME.sse, an event stream, or NAME.json, a JSON body)."""

from __future__ import annotations

import re
from pathlib import Path

from recovery.mock.steps import Fail, Failure, HttpError, Plan, RawBody

WIRE_FIXTURES = Path(__file__).parent / "wire_fixtures"
_CONTENT_TYPES = {".sse": "text/event-stream", ".json": "application/json"}
_FIXTURE_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")


def recorded_body_plan(name: str) -> Plan:
    """The recorded body ``name``, with status 200; a 400 naming the known ones otherwise."""
    if _FIXTURE_NAME.fullmatch(name):
        for suffix, content_type in _CONTENT_TYPES.items():
            path = WIRE_FIXTURES / f"{name}{suffix}"
            if path.is_file():
                return Plan((RawBody(path.read_bytes(), content_type),))
    known = ", ".join(sorted(p.stem for p in WIRE_FIXTURES.iterdir() if p.suffix in _CONTENT_TYPES))
    message = f"unknown wire fixture {name!r}; known: {known}"
    return Plan((HttpError(Fail(Failure.BAD_REQUEST, message=message)),))
