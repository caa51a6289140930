"""Answering an agent's permission requests by a configured policy, never by asking a person."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass


class PermissionPolicy(enum.StrEnum):
    ALLOW_READ_ONLY = "allow_read_only"
    ALLOW_ALL = "allow_all"
    DENY_ALL = "deny_all"


# Tool kinds that only look: reading, searching and thinking change nothing outside the agent.
READ_ONLY_KINDS = frozenset({"read", "search", "think"})
_ALLOW = ("allow_once", "allow_always")
_REJECT = ("reject_once", "reject_always")


@dataclass(frozen=True, slots=True)
class PermissionChoice:
    option_id: str | None  # None: answer "cancelled" (the agent offered no matching option)
    option_kind: str | None
    granted: bool


def permission_choose(
    *, policy: PermissionPolicy, tool_kind: str | None, options: Sequence[tuple[str, str]]
) -> PermissionChoice:
    """``options`` are (option id, option kind) pairs as the agent offered them."""
    grant = policy is PermissionPolicy.ALLOW_ALL or (
        policy is PermissionPolicy.ALLOW_READ_ONLY and tool_kind in READ_ONLY_KINDS
    )
    # "once" before "always": a standing grant would outlive this policy's decision.
    for wanted in _ALLOW if grant else _REJECT:
        for option_id, kind in options:
            if kind == wanted:
                return PermissionChoice(option_id=option_id, option_kind=kind, granted=grant)
    return PermissionChoice(option_id=None, option_kind=None, granted=False)
