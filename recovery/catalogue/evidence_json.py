"""Evidence as JSON: the shape the CLI reads and the fixtures are written in.

Keys are Evidence field names; only ``source`` and ``excerpt`` are required. The excerpt is raw
provider text and is redacted (diagnostic tier) here, the way an adapter would.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from recovery.redact import redact_diagnostic
from recovery.taxonomy import EXCERPT_LIMIT_BYTES, Evidence, Exposure, Kind, Phase, Source


class BadEvidence(ValueError):
    pass


_ENUMS = {"source": Source, "phase": Phase, "kind": Kind, "exposure": Exposure}
_INTS = ("status", "retry_after_ms", "generation", "reset_at_ms")
_STRINGS = ("excerpt", "provider_code", "provider_id", "model_id")
_KNOWN = frozenset(f.name for f in fields(Evidence))
_REQUIRED = ("source", "excerpt")


def evidence_from_json(data: Any) -> Evidence:
    if not isinstance(data, dict):
        raise BadEvidence("each line must be a JSON object")
    for key in data:
        if key not in _KNOWN:
            raise BadEvidence(f"unknown key {key!r}")
    for key in _REQUIRED:
        if key not in data:
            raise BadEvidence(f"missing required key {key!r}")
    values: dict[str, Any] = {}
    for key, value in data.items():
        values[key] = _convert(key, value)
    values["excerpt"] = redact_diagnostic(values["excerpt"], limit_bytes=EXCERPT_LIMIT_BYTES)
    return Evidence(**values)


def _convert(key: str, value: Any) -> Any:
    if key in _ENUMS:
        if key == "phase" and value is None:
            return None
        try:
            return _ENUMS[key](value)
        except ValueError:
            choices = ", ".join(member.value for member in _ENUMS[key])
            raise BadEvidence(
                f"bad value for {key!r}: {value!r} (expected one of {choices})"
            ) from None
    if key in _INTS:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise BadEvidence(f"bad value for {key!r}: {value!r} (expected an integer)")
        return value
    if key in _STRINGS:
        if value is None and key != "excerpt":
            return None
        if not isinstance(value, str):
            raise BadEvidence(f"bad value for {key!r}: expected a string")
        return value
    if key == "should_retry" and value is None:
        return None
    if key in ("terminal_seen", "should_retry"):
        if not isinstance(value, bool):
            raise BadEvidence(f"bad value for {key!r}: {value!r} (expected true or false)")
        return value
    raise BadEvidence(f"unknown key {key!r}")
