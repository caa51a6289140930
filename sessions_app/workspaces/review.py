"""Review of a task's worktree: what the agent changed since the worktree's base commit.

Untracked new files count too, so the diff is taken through a temporary index (``read-tree
<base>``, ``add -A``, ``diff --cached <base>``): the worktree's real index, which the agent's
git may have left in any state, is never read or written. Git runs on the host through the
runner (sessions_app/workspaces/git.py), with the worktree's admin folder as its git directory
and no textconv or external diff, so nothing in the tree the agent wrote decides what runs.

The page shows at most REVIEW_MAX_FILES files and REVIEW_MAX_BYTES of patch text; the rest is
counted ("N more files not shown") and is in the downloadable patch.
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from sessions_app.workspaces.git import GitFailed, GitPlace, git_run
from sessions_app.workspaces.models import TaskWorkspace
from sessions_app.workspaces.places import (
    PlaceRefused,
    admin_dir_for,
    repository_checked,
    tree_exceeds,
    worktree_path_for,
)
from sessions_app.workspaces.selectors import task_workspace

logger = logging.getLogger(__name__)

REVIEW_MAX_FILES = 50
REVIEW_MAX_BYTES = 256 * 1024
_DIFF_OPTIONS = ("--no-color", "--no-ext-diff", "--no-textconv", "--no-renames")


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str
    added: int | None  # None for a binary file
    removed: int | None
    patch: str


@dataclass(frozen=True, slots=True)
class Review:
    base_commit: str
    files: tuple[FileChange, ...]
    hidden_files: int  # changed files beyond the page's caps
    # The worktree holds more than the app hashes (the snapshot limits): nothing was read.
    too_large: bool = False

    @property
    def added(self) -> int:
        return sum(change.added or 0 for change in self.files)

    @property
    def removed(self) -> int:
        return sum(change.removed or 0 for change in self.files)


def worktree_patch(*, task_id: int) -> bytes | None:
    """The whole patch of the task's worktree against its base commit, or None: an unbound task,
    no worktree yet (or any more), or a repository git cannot read."""
    found = _diff(task_id, stat=False)
    return None if found is None or isinstance(found, TaskWorkspace) else found[1]


def worktree_review(*, task_id: int) -> Review | None:
    """The task page's review of its worktree (None as for ``worktree_patch``)."""
    found = _diff(task_id, stat=True)
    if found is None:
        return None
    if isinstance(found, TaskWorkspace):
        return Review(base_commit=found.base_commit, files=(), hidden_files=0, too_large=True)
    workspace, patch, numstat = found
    counts = _numstat(numstat or b"")
    patches = _file_patches(patch.decode("utf-8", "replace"))
    files: list[FileChange] = []
    budget = REVIEW_MAX_BYTES
    for (path, added, removed), text in zip(counts, patches, strict=False):
        if len(files) >= REVIEW_MAX_FILES or len(text) > budget:
            break
        budget -= len(text)
        files.append(FileChange(path=path, added=added, removed=removed, patch=text))
    return Review(
        base_commit=workspace.base_commit, files=tuple(files), hidden_files=len(counts) - len(files)
    )


def _diff(
    task_id: int, *, stat: bool
) -> tuple[TaskWorkspace, bytes, bytes | None] | TaskWorkspace | None:
    """The worktree's patch (and numstat) against its base; just the workspace when it is larger
    than the app will hash into the project's object store; None when there is nothing to read."""
    workspace = task_workspace(task_id=task_id)
    if workspace is None or workspace.state != TaskWorkspace.State.READY:
        return None
    path = worktree_path_for(task_id)
    try:
        repository = repository_checked(workspace.project.repo_path)
    except PlaceRefused:
        return None
    if not path.is_dir() or path.is_symlink():
        return None
    limits = review_limits()
    if tree_exceeds(path, max_files=limits[0], max_bytes=limits[1]):
        logger.warning("worktree of task %s not reviewed: larger than the snapshot limits", task_id)
        return workspace
    with tempfile.TemporaryDirectory(prefix="kandev-review-") as scratch:
        place = GitPlace(
            git_dir=admin_dir_for(repository, task_id),
            work_tree=path,
            index_file=Path(scratch) / "index",
        )
        base = workspace.base_commit
        try:
            git_run(place, ["read-tree", base])
            git_run(place, ["add", "-A"])
            patch = git_run(place, ["diff", "--cached", *_DIFF_OPTIONS, base, "--"])
            numstat = (
                git_run(place, ["diff", "--cached", "--numstat", "-z", *_DIFF_OPTIONS, base, "--"])
                if stat
                else None
            )
        except GitFailed as failed:
            logger.warning("worktree of task %s not reviewed: %s", task_id, failed.detail)
            return None
    return workspace, patch, numstat


def review_limits() -> tuple[int, int]:
    """(files, bytes): what the review hashes at most, the same bounds as the snapshots'."""
    return settings.KANDEV_SNAPSHOT_MAX_FILES, settings.KANDEV_SNAPSHOT_MAX_MB * 1024 * 1024


def _numstat(raw: bytes) -> list[tuple[str, int | None, int | None]]:
    """``added<TAB>removed<TAB>path`` records, NUL-terminated (``-z``, no renames)."""
    rows = []
    for record in raw.decode("utf-8", "replace").split("\0"):
        if not record:
            continue
        added, removed, path = record.split("\t", 2)
        rows.append((path, _count(added), _count(removed)))
    return rows


def _file_patches(patch: str) -> list[str]:
    """The patch cut at each ``diff --git`` header, in git's order (the numstat's order too)."""
    pieces: list[list[str]] = []
    for line in patch.splitlines(keepends=True):
        if line.startswith("diff --git ") or not pieces:
            pieces.append([line])
        else:
            pieces[-1].append(line)
    return ["".join(piece) for piece in pieces]


def _count(field: str) -> int | None:
    return None if field == "-" else int(field)
