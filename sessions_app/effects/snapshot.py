"""A workspace's full state as a git tree, taken and restored without touching the workspace's
own repository (if it has one) and without letting anything in the workspace choose what runs.

Each session has a private bare repository outside the workspace (``snapshots/session-<id>.git``
under the ACP work directory). A snapshot is ``add -A --force`` into a temporary index over the
workspace, then ``write-tree``: tracked, untracked and ignored files alike (an ignored file the
agent wrote is still an effect). Git itself skips every entry named ``.git``, so a workspace that
is a repository or a worktree is snapshotted as its files only. Git records no empty directory:
an empty folder is neither an effect nor restored (documented in docs/ARCHITECTURE.md).
A folder holding its own ``.git`` is recorded as a gitlink, so its inner files are not compared.

Restore never writes outside the workspace: removals walk the path one directory at a time with
``O_NOFOLLOW`` (a symlink the agent planted in place of a folder is removed, never followed), and
``checkout-index --force`` replaces a symlink in its way instead of writing through it.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sessions_app.workspaces.git import GitFailed, GitPlace, git_run, git_text
from sessions_app.workspaces.places import tree_exceeds


@dataclass(frozen=True, slots=True)
class SnapshotLimits:
    max_bytes: int
    max_files: int


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A tree oid, or why there is none (``too_large`` or ``failed``): then effects are unknown."""

    tree: str | None
    problem: str | None = None  # "too_large" | "failed"


@dataclass(frozen=True, slots=True)
class RestorePlan:
    """What a restore to the turn's start would do, for the confirmation step."""

    remove: tuple[str, ...]  # added since the snapshot
    restore: tuple[str, ...]  # deleted since the snapshot
    revert: tuple[str, ...]  # changed since (content, mode or type)

    @property
    def empty(self) -> bool:
        return not (self.remove or self.restore or self.revert)

    @property
    def count(self) -> int:
        return len(self.remove) + len(self.restore) + len(self.revert)


def snapshot_store_ensure(*, store: Path) -> GitPlace:
    """The session's private bare repository, created on first use."""
    place = GitPlace(git_dir=store)
    if not (store / "HEAD").is_file():
        store.parent.mkdir(parents=True, exist_ok=True)
        git_run(GitPlace(git_dir=store), ["init", "--quiet", "--bare", str(store)])
    return place


def snapshot_take(*, workspace: Path, store: Path, limits: SnapshotLimits) -> Snapshot:
    """The workspace's full state now, as a tree in ``store``; never raises for a bad workspace."""
    too_large = tree_exceeds(workspace, max_files=limits.max_files, max_bytes=limits.max_bytes)
    if not workspace.is_dir() or too_large:
        return Snapshot(tree=None, problem="too_large" if workspace.is_dir() else "failed")
    try:
        snapshot_store_ensure(store=store)
        with _temporary_index(store) as index:
            place = GitPlace(git_dir=store, work_tree=workspace, index_file=index)
            git_run(place, ["add", "--all", "--force", "--", "."])
            return Snapshot(tree=git_text(place, ["write-tree"]))
    except (GitFailed, OSError):
        return Snapshot(tree=None, problem="failed")


def snapshot_changes(*, store: Path, before: str, after: str) -> list[tuple[str, str]]:
    """(status, path) for every path that differs: A added, D deleted, M/T changed."""
    out = git_run(
        GitPlace(git_dir=store),
        ["diff-tree", "-r", "--no-renames", "--name-status", "-z", before, after],
    )
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    pairs = [(fields[i], fields[i + 1]) for i in range(0, len(fields) - 1, 2) if fields[i]]
    return [(status[0], path) for status, path in pairs]


def restore_plan(*, store: Path, before: str, now: str) -> RestorePlan:
    changes = snapshot_changes(store=store, before=before, after=now)
    return RestorePlan(
        remove=tuple(path for status, path in changes if status == "A"),
        restore=tuple(path for status, path in changes if status == "D"),
        revert=tuple(path for status, path in changes if status not in {"A", "D"}),
    )


def snapshot_restore(*, workspace: Path, store: Path, tree: str, limits: SnapshotLimits) -> None:
    """Put ``workspace`` back exactly as ``tree``. Raises GitFailed when it cannot be measured."""
    now = snapshot_take(workspace=workspace, store=store, limits=limits)
    if now.tree is None:
        raise GitFailed(f"the workspace could not be snapshotted ({now.problem})")
    plan = restore_plan(store=store, before=tree, now=now.tree)
    # Longest first, so a planted symlink or file inside a new folder goes before the folder.
    for path in sorted((*plan.remove, *plan.revert), key=len, reverse=True):
        _remove_inside(workspace, path)
    with _temporary_index(store) as index:
        place = GitPlace(git_dir=store, work_tree=workspace, index_file=index)
        git_run(place, ["read-tree", tree])
        git_run(place, ["checkout-index", "--all", "--force"])
    for path in sorted(plan.remove, key=len, reverse=True):
        _prune_empty_parents(workspace, path)


class _temporary_index:
    def __init__(self, store: Path) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="index-", dir=store)

    def __enter__(self) -> Path:
        return Path(self._dir.name) / "index"

    def __exit__(self, *exc: object) -> None:
        self._dir.cleanup()


def _components(path: str) -> list[str]:
    parts = [part for part in path.split("/") if part]
    if not parts or any(part in {".", ".."} for part in parts):
        raise GitFailed(f"refusing an odd path from git: {path!r}")
    return parts


def _remove_inside(workspace: Path, path: str) -> None:
    """Remove ``path`` under ``workspace`` without following any symlink on the way."""
    *parents, leaf = _components(path)
    fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for part in parents:
            try:
                child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as error:
                if error.errno in {errno.ENOENT, errno.ENOTDIR, errno.ELOOP}:
                    return  # a parent is gone or is no folder: it is its own entry in the plan
                raise
            os.close(fd)
            fd = child
        _remove_entry(fd, leaf)
    finally:
        os.close(fd)


def _remove_entry(dir_fd: int, name: str) -> None:
    try:
        info = os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        for child in _listing(dir_fd, name):
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
            try:
                _remove_entry(inner, child)
            finally:
                os.close(inner)
        os.rmdir(name, dir_fd=dir_fd)
    else:
        os.unlink(name, dir_fd=dir_fd)


def _listing(dir_fd: int, name: str) -> Iterator[str]:
    inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
    try:
        yield from os.listdir(inner)
    finally:
        os.close(inner)


def _prune_empty_parents(workspace: Path, path: str) -> None:
    """Folders the agent created for files now removed go too (git keeps no empty folder)."""
    parts = _components(path)[:-1]
    while parts:
        target = workspace.joinpath(*parts)
        if target.is_symlink() or not target.is_dir() or any(target.iterdir()):
            return
        target.rmdir()
        parts.pop()
