"""Answering an agent's permission requests by a configured policy, or by asking a person.

Under ``ASK`` (a target's default) whatever the read-only policy would grant passes without
asking, and every other request goes to a person (``asking.py``). The read-only policy is
path-aware: a read or a search passes without asking only when every path the call names
resolves, symlinks followed, inside the agent's working directory. A call that names no path we
can check, a path with a NUL, or one that leaves the directory (``..``, an absolute path
elsewhere, a symlink planted inside that points out) is refused like an edit. The agent's
sandbox already hides everything else; this keeps the transcript from even asking.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any


class PermissionPolicy(enum.StrEnum):
    ASK = "ask"
    ALLOW_READ_ONLY = "allow_read_only"
    ALLOW_ALL = "allow_all"
    DENY_ALL = "deny_all"


# Tool kinds that only look: reading and searching change nothing; thinking names no path.
READ_ONLY_KINDS = frozenset({"read", "search", "think"})
_PATHLESS_KINDS = frozenset({"think"})
_ALLOW = ("allow_once", "allow_always")
_REJECT = ("reject_once", "reject_always")
# Keys of a tool's raw input that name a file or folder, across the agents we run (Claude Code's
# file_path / path / notebook_path, Gemini CLI's file_path / dir_path / absolute_path, ...).
_PATH_KEYS = frozenset(
    {"file_path", "path", "absolute_path", "dir_path", "notebook_path", "directory", "cwd"}
)
_PATH_LIST_KEYS = frozenset({"paths", "file_paths", "absolute_paths"})
_GLOB_CHARS = frozenset("*?[{")


@dataclass(frozen=True, slots=True)
class Workspace:
    """The agent's working directory as the agent sees it (inside its sandbox) and where that
    directory is on this machine."""

    seen: str
    host: str

    def host_path(self, agent_path: str) -> Path | None:
        """Where ``agent_path`` (absolute, or relative to the working directory) lies on this
        machine, if it is under the working directory as the agent sees it; else None."""
        seen = PurePosixPath(self.seen)
        path = PurePosixPath(agent_path)
        if not path.is_absolute():
            path = seen / path
        try:
            relative = path.relative_to(seen)
        except ValueError:
            return None
        return Path(self.host, relative)

    def current_text(self, agent_path: str, *, limit: int) -> str | None:
        """What a file inside the directory holds now, for a person comparing a proposed change
        with it: None when it is not there, not a regular file, outside (symlinks followed),
        larger than ``limit`` bytes or not UTF-8 text."""
        if not self.contains(agent_path):
            return None
        host = self.host_path(os.path.normpath(agent_path))
        try:
            resolved = Path(os.path.realpath(host)) if host is not None else None
            if resolved is None or not resolved.is_file() or resolved.stat().st_size > limit:
                return None
            return resolved.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def contains(self, agent_path: str) -> bool:
        """Whether ``agent_path`` resolves (``..`` and symlinks followed) inside the directory."""
        if not agent_path or "\x00" in agent_path:
            return False
        host = self.host_path(os.path.normpath(agent_path))
        if host is None:
            return False
        root = os.path.realpath(self.host)
        resolved = os.path.realpath(host)
        return resolved == root or resolved.startswith(root + os.sep)


@dataclass(frozen=True, slots=True)
class ToolRequest:
    kind: str | None
    paths: tuple[str, ...] = ()  # every path the call names, as the agent wrote it


def _literal_prefix(pattern: str) -> str:
    # A glob's fixed leading folders are what it can reach: "/etc/*" reaches /etc.
    parts = []
    for part in PurePosixPath(pattern).parts:
        if _GLOB_CHARS & set(part):
            break
        parts.append(part)
    return str(PurePosixPath(*parts)) if parts else "."


def request_paths(*, locations: Iterable[str], raw_input: Any) -> tuple[str, ...]:
    """The paths a permission request names: its locations and the path fields of its input."""
    found = [path for path in locations if isinstance(path, str)]
    if isinstance(raw_input, Mapping):
        for key, value in raw_input.items():
            if key in _PATH_KEYS and isinstance(value, str):
                found.append(value)
            elif key in _PATH_LIST_KEYS and isinstance(value, list):
                found.extend(item for item in value if isinstance(item, str))
            elif key == "pattern" and isinstance(value, str) and value.startswith(("/", "..", "~")):
                found.append(_literal_prefix(value))
    return tuple(dict.fromkeys(found))


@dataclass(frozen=True, slots=True)
class PermissionChoice:
    option_id: str | None  # None: answer "cancelled" (the agent offered no matching option)
    option_kind: str | None
    granted: bool


def read_is_contained(*, request: ToolRequest, workspace: Workspace) -> bool:
    if request.kind in _PATHLESS_KINDS:
        return True
    return bool(request.paths) and all(workspace.contains(path) for path in request.paths)


def _contained_read(*, request: ToolRequest, workspace: Workspace) -> bool:
    return request.kind in READ_ONLY_KINDS and read_is_contained(
        request=request, workspace=workspace
    )


def permission_asks_person(
    *, policy: PermissionPolicy, request: ToolRequest, workspace: Workspace
) -> bool:
    """Whether a person answers this request: under ASK, anything but a contained read."""
    return policy is PermissionPolicy.ASK and not _contained_read(
        request=request, workspace=workspace
    )


def permission_choose(
    *,
    policy: PermissionPolicy,
    request: ToolRequest,
    workspace: Workspace,
    options: Sequence[tuple[str, str]],
) -> PermissionChoice:
    """``options`` are (option id, option kind) pairs as the agent offered them. Under ASK this
    is the answer given without a person (a contained read granted, everything else refused)."""
    grant = policy is PermissionPolicy.ALLOW_ALL or (
        policy in (PermissionPolicy.ALLOW_READ_ONLY, PermissionPolicy.ASK)
        and _contained_read(request=request, workspace=workspace)
    )
    # "once" before "always": a standing grant would outlive this policy's decision.
    for wanted in _ALLOW if grant else _REJECT:
        for option_id, kind in options:
            if kind == wanted:
                return PermissionChoice(option_id=option_id, option_kind=kind, granted=grant)
    return PermissionChoice(option_id=None, option_kind=None, granted=False)
