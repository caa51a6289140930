"""Prompt counters for the mock ACP agent, kept in a file so they survive the agent's relaunch.

A worker starts a fresh agent process for every attempt, so "fail the first N prompts" must be
remembered outside the process. The file is locked while it is read and rewritten, because two
agents may share it.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from pathlib import Path

STATE_ENV = "KANDEV_MOCK_ACP_STATE"


def state_path() -> Path:
    configured = os.environ.get(STATE_ENV)
    if configured:
        return Path(configured)
    return Path(tempfile.gettempdir()) / "kandev-mock-acp-state.json"


def counter_next(*, key: str, path: Path | None = None) -> int:
    """How many prompts with ``key`` came before this one (0 for the first); counts this one."""
    path = path or state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.seek(0)
            raw = handle.read()
            counters = json.loads(raw) if raw.strip() else {}
            seen = int(counters.get(key, 0))
            counters[key] = seen + 1
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps(counters, sort_keys=True))
            handle.flush()
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    return seen
