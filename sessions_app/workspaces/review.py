"""What a task's agent changed: its worktree against the commit the task started from.

Read without touching anything the agent or git uses: a temporary index is filled from the base
commit and then from the worktree's files (``read-tree``, ``add -A``), and compared with the base
(``diff --cached``), so new files show as added and deleted ones as removed, while the worktree's
own index, HEAD and branch stay as they are. The git directory is the worktree's admin folder
(never the ``.git`` file the agent can rewrite), through the host git runner's safe options.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from django.utils.safestring import SafeString

from sessions_app.diffs import diff_html, diff_stats
from sessions_app.workspaces import wording
from sessions_app.workspaces.git import GitFailed, GitPlace, git_run
from sessions_app.workspaces.models import TaskWorkspace
from sessions_app.workspaces.places import PlaceRefused, repository_checked
from sessions_app.workspaces.selectors import task_workspace
from sessions_app.workspaces.services import worktree_place

# The page shows at most this many files and this many bytes of patch; the download is whole.
MAX_REVIEW_FILES = 50
MAX_REVIEW_BYTES = 512 * 1024
_DIFF_OPTIONS = ("--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "--binary")


@dataclass(frozen=True, slots=True)
class ReviewFile:
    path: str
    added: int
    removed: int
    html: SafeString


@dataclass(frozen=True, slots=True)
class Review:
    """``files`` as shown; ``hidden`` how many more changed; ``notice`` a sentence instead of a
    diff (no worktree yet, removed, unreadable)."""

    files: tuple[ReviewFile, ...] = ()
    hidden: int = 0
    added: int = 0
    removed: int = 0
    notice: str = ""

    @property
    def hidden_text(self) -> str:
        return wording.files_not_shown(self.hidden) if self.hidden else ""


def worktree_patch(*, workspace: TaskWorkspace) -> bytes | None:
    """The whole change of the task's worktree against its base, as a patch ``git apply``
    takes; None when there is no worktree to read (not made yet, removed, or broken)."""
    if workspace.state != TaskWorkspace.State.READY:
        return None
    try:
        repository = repository_checked(workspace.project.repo_path)
    except PlaceRefused:
        return None
    place = worktree_place(repository, task_id=workspace.task_id)
    if not Path(place.work_tree or "").is_dir():
        return None
    with tempfile.TemporaryDirectory(prefix="kandev-review-") as scratch:
        scan = GitPlace(
            git_dir=place.git_dir, work_tree=place.work_tree, index_file=Path(scratch, "index")
        )
        try:
            git_run(scan, ["read-tree", workspace.base_commit])
            git_run(scan, ["add", "-A", "--", "."])
            return git_run(scan, ["diff", "--cached", *_DIFF_OPTIONS, workspace.base_commit])
        except GitFailed:
            return None


def worktree_review(*, workspace: TaskWorkspace) -> Review:
    """The task page's review: each changed file with its lines added and removed, rendered."""
    if workspace.state == TaskWorkspace.State.PENDING:
        return Review(notice=wording.REVIEW_NOT_YET)
    if workspace.state == TaskWorkspace.State.REMOVED:
        return Review(notice=wording.review_removed(workspace.branch))
    patch = worktree_patch(workspace=workspace)
    if patch is None:
        return Review(notice=wording.REVIEW_UNREADABLE)
    text = patch.decode("utf-8", "replace")
    chunks = _per_file(text)
    if not chunks:
        return Review(notice=wording.REVIEW_NO_CHANGES)
    shown: list[ReviewFile] = []
    budget = MAX_REVIEW_BYTES
    added = removed = 0
    for chunk in chunks:
        stats = diff_stats(chunk)
        stat_added = sum(stat.added for stat in stats)
        stat_removed = sum(stat.removed for stat in stats)
        added, removed = added + stat_added, removed + stat_removed
        if len(shown) >= MAX_REVIEW_FILES or len(chunk) > budget:
            continue
        budget -= len(chunk)
        shown.append(
            ReviewFile(
                path=stats[0].path if stats else "",
                added=stat_added,
                removed=stat_removed,
                html=diff_html(chunk),
            )
        )
    return Review(files=tuple(shown), hidden=len(chunks) - len(shown), added=added, removed=removed)


def _per_file(patch: str) -> list[str]:
    chunks: list[list[str]] = []
    for line in patch.splitlines(keepends=True):
        if line.startswith("diff --git ") or not chunks:
            chunks.append([])
        chunks[-1].append(line)
    return ["".join(chunk) for chunk in chunks if chunk and chunk[0].startswith("diff --git ")]


def review_context(*, task_id: int) -> dict:
    """The task page's review section: the worktree binding and its changes, or ``workspace``
    None for a task bound to no project (no section at all)."""
    workspace = task_workspace(task_id=task_id)
    if workspace is None:
        return {"workspace": None}
    return {
        "workspace": workspace,
        "review": worktree_review(workspace=workspace),
        "task_id": task_id,
    }
