"""Running Debian's git on the host against a directory an agent has written to.

A task's worktree is the agent's playground: it can plant a ``.git`` file pointing at a
repository of its own whose config runs a command (``core.fsmonitor``, ``core.hooksPath``, a
filter driver), and this process runs git unconfined. So every call here names the git directory
and the work tree explicitly (never discovered from the working directory), reads no system or
global config, disables hooks and the file-system monitor, never prompts, and is bounded in time
and output. The repository's own config is the operator's (the sandbox binds it read-only).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GIT = "/usr/bin/git"
_TIMEOUT_S = 60.0
_MAX_OUTPUT_BYTES = 64 * 1024 * 1024
# Options before the subcommand: nothing the work tree could carry runs on this machine.
_SAFE_OPTIONS = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "protocol.allow=never",
    "-c",
    "safe.directory=*",
)


class GitFailed(Exception):
    """git exited non-zero, timed out or printed too much; ``detail`` is its last words (for the
    operator's log; never shown to a user as is)."""

    def __init__(self, detail: str, *, status: int | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status


@dataclass(frozen=True, slots=True)
class GitPlace:
    """Which repository and which files one call is about: ``git_dir`` is the repository (or a
    worktree's admin folder under ``.git/worktrees``), ``work_tree`` its files, if any."""

    git_dir: Path
    work_tree: Path | None = None
    index_file: Path | None = None  # a temporary index, so the real one is never touched


def git_env(place: GitPlace, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": "/nonexistent",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_DIR": str(place.git_dir),
        # Identity for the commits the app itself makes (snapshots): never a person's.
        "GIT_AUTHOR_NAME": "Kandev",
        "GIT_AUTHOR_EMAIL": "kandev@localhost",
        "GIT_COMMITTER_NAME": "Kandev",
        "GIT_COMMITTER_EMAIL": "kandev@localhost",
    }
    if place.work_tree is not None:
        env["GIT_WORK_TREE"] = str(place.work_tree)
    if place.index_file is not None:
        env["GIT_INDEX_FILE"] = str(place.index_file)
    env.update(extra or {})
    return env


def git_run(
    place: GitPlace,
    args: Sequence[str],
    *,
    stdin: bytes | None = None,
    ok_statuses: frozenset[int] = frozenset({0}),
    timeout_s: float = _TIMEOUT_S,
    extra_env: Mapping[str, str] | None = None,
) -> bytes:
    """Run ``git <args>`` for ``place`` and return its standard output. Raises GitFailed."""
    cwd = place.work_tree if place.work_tree is not None else place.git_dir
    try:
        # A fixed binary; arguments never pass through a shell.
        done = subprocess.run(
            [GIT, *_SAFE_OPTIONS, *args],
            input=stdin,
            capture_output=True,
            cwd=cwd if os.path.isdir(cwd) else "/",
            env=git_env(place, extra_env),
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise GitFailed(f"git {args[0]} took longer than {timeout_s:g} s") from None
    except OSError as error:
        raise GitFailed(f"git could not be started ({type(error).__name__})") from None
    if len(done.stdout) > _MAX_OUTPUT_BYTES:
        raise GitFailed(f"git {args[0]} printed more than {_MAX_OUTPUT_BYTES} bytes")
    if done.returncode not in ok_statuses:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise GitFailed(
            f"git {args[0]} exited with status {done.returncode}: {' '.join(tail)}",
            status=done.returncode,
        )
    return done.stdout


def git_text(place: GitPlace, args: Sequence[str], **kwargs: Any) -> str:
    return git_run(place, args, **kwargs).decode("utf-8", "surrogateescape").strip()
