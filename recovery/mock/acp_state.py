"""Prompt counters for the mock ACP agent, kept in a file so they survive the agent's relaunch.

A worker starts a fresh agent process for every attempt, so "fail the first N prompts" must be
remembered outside the process. The file is locked while it is read and rewritten, because two
agents may share it. A counter is forgotten once its scenario has played in full (the prompt that
succeeds), so the same prompt fails N times again in a new session.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

STATE_ENV = "KANDEV_MOCK_ACP_STATE"


def state_path() -> Path:
    configured = os.environ.get(STATE_ENV)
    if configured:
        return Path(configured)
    return Path(tempfile.gettempdir()) / "kandev-mock-acp-state.json"


def _update(path: Path | None, change: Callable[[dict[str, int]], int]) -> int:
    """Apply ``change`` to the counters under the file lock; return what it returned."""
    path = path or state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.seek(0)
            raw = handle.read()
            counters = json.loads(raw) if raw.strip() else {}
            result = change(counters)
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps(counters, sort_keys=True))
            handle.flush()
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    return result


def counter_next(*, key: str, path: Path | None = None) -> int:
    """How many prompts with ``key`` came before this one (0 for the first); counts this one."""

    def count(counters: dict[str, int]) -> int:
        seen = int(counters.get(key, 0))
        counters[key] = seen + 1
        return seen

    return _update(path, count)


def counter_forget(*, key: str, path: Path | None = None) -> None:
    """The scenario for ``key`` has played in full: the next such prompt starts it over."""
    _update(path, lambda counters: counters.pop(key, 0))
