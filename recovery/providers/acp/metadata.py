"""The allowlist of terminal prompt-error metadata that may travel past the adapter.

Only four facts cross: the JSON-RPC code, the adapter-declared error kind, the negotiated
provider identity and the settled model identity. Raw JSON-RPC ``data`` never does: it is the
agent's free-form payload and may hold anything, secrets included. A field that is malformed,
oversized or of the wrong type is dropped on its own; the rest of the projection survives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

ERROR_KIND_LIMIT_BYTES = 64
_ERROR_KIND = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
# Agent names and model ids ("claude-code-acp", "anthropic/claude-sonnet-4.5", "gpt-5:high"):
# a conservative alphabet that cannot carry a URL, a path or whitespace.
_IDENTITY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@/\-]{0,127}")
_JSONRPC_CODE_RANGE = range(-(2**31), 2**31)


@dataclass(frozen=True, slots=True)
class PromptErrorMetadata:
    jsonrpc_code: int | None = None
    error_kind: str | None = None
    provider_id: str | None = None
    model_id: str | None = None  # only when the agent had settled a model before the error


def allowed_error_kind(value: Any) -> str | None:
    if not isinstance(value, str) or not _ERROR_KIND.fullmatch(value):
        return None
    return value if len(value.encode("utf-8")) <= ERROR_KIND_LIMIT_BYTES else None


def allowed_identity(value: Any) -> str | None:
    if not isinstance(value, str) or not _IDENTITY.fullmatch(value) or "//" in value:
        return None
    return value


def allowed_jsonrpc_code(value: Any) -> int | None:
    # bool is an int in Python; a JSON true is not an error code.
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if value in _JSONRPC_CODE_RANGE else None


def metadata_project(
    *, code: Any, data: Any, provider_id: Any, model_id: Any
) -> PromptErrorMetadata:
    """The allowlisted projection of one terminal prompt error; never raises."""
    kind = data.get("errorKind") if isinstance(data, dict) else None
    return PromptErrorMetadata(
        jsonrpc_code=allowed_jsonrpc_code(code),
        error_kind=allowed_error_kind(kind),
        provider_id=allowed_identity(provider_id),
        model_id=allowed_identity(model_id),
    )
