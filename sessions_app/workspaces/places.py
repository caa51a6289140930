"""Where a project's repository and a task's worktree are, checked before git or the file system
sees them.

Every path that reaches git or the disk is built here: a project's repository from a path staff
typed (absolute, no NUL, no ``..``, resolved with symlinks followed and inside one of
KANDEV_PROJECT_ROOTS), a worktree from the task's integer id only, a base from a ref that
``git check-ref-format`` accepts and ``rev-parse --verify --end-of-options`` resolves. Nothing a
person types is ever an option to git (a leading ``-`` is refused before git sees it).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from sessions_app.workspaces import wording
from sessions_app.workspaces.git import GitFailed, GitPlace, git_run, git_text

BRANCH_PREFIX = "kandev/task-"
_COMMIT = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


class PlaceRefused(ValueError):
    """A path or ref was refused; ``message`` is for the person who typed it."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class Repository:
    """A registered repository as found on disk: its checkout and its git directory."""

    checkout: Path
    git_dir: Path

    @property
    def place(self) -> GitPlace:
        return GitPlace(git_dir=self.git_dir)


def project_roots() -> tuple[Path, ...]:
    return tuple(Path(os.path.realpath(root)) for root in settings.KANDEV_PROJECT_ROOTS)


def repository_checked(path: str) -> Repository:
    """The repository at ``path`` if it may be a project's, else PlaceRefused. Checked again on
    every use: a root removed from the settings or a path replaced by a symlink later refuses."""
    if "\x00" in path:
        raise PlaceRefused(wording.NUL_IN_PATH)
    if not os.path.isabs(path):
        raise PlaceRefused(wording.NOT_ABSOLUTE)
    if ".." in Path(path).parts:
        raise PlaceRefused(wording.OUTSIDE_ROOTS)
    roots = project_roots()
    if not roots:
        raise PlaceRefused(wording.NO_ROOTS)
    try:
        resolved = Path(os.path.realpath(path, strict=True))
    except OSError:
        raise PlaceRefused(wording.NOT_A_REPOSITORY) from None
    if not any(resolved.is_relative_to(root) for root in roots):
        raise PlaceRefused(wording.OUTSIDE_ROOTS)
    git_dir = resolved / ".git"
    # A real directory, not a .git file or a symlink that could lead out of the root.
    if git_dir.is_symlink() or not git_dir.is_dir():
        raise PlaceRefused(wording.NOT_A_REPOSITORY)
    repository = Repository(checkout=resolved, git_dir=git_dir)
    try:
        git_text(repository.place, ["rev-parse", "--git-dir"])
    except GitFailed:
        raise PlaceRefused(wording.NOT_A_REPOSITORY) from None
    return repository


def ref_checked(repository: Repository, ref: str) -> str:
    """``ref`` as a full ref name or a commit id of ``repository``, or PlaceRefused. A short
    branch or tag name (``main``, ``v1``) is looked up under refs/heads and refs/tags."""
    if not ref or "\x00" in ref or ref.startswith("-") or any(c.isspace() for c in ref):
        raise PlaceRefused(wording.BAD_REF)
    if _COMMIT.fullmatch(ref):
        candidates = [ref]
    elif ref.startswith("refs/"):
        candidates = [ref]
    else:
        candidates = [f"refs/heads/{ref}", f"refs/tags/{ref}"]
    for candidate in candidates:
        if candidate.startswith("refs/") and not _ref_format_ok(candidate):
            continue
        if commit_of(repository, candidate) is not None:
            return candidate
    raise PlaceRefused(wording.BAD_REF)


def default_ref(repository: Repository) -> str:
    """The repository's default branch (what HEAD names), or PlaceRefused when it has none."""
    try:
        ref = git_text(repository.place, ["symbolic-ref", "--quiet", "HEAD"])
    except GitFailed:
        raise PlaceRefused(wording.NO_DEFAULT_BRANCH) from None
    if not _ref_format_ok(ref) or commit_of(repository, ref) is None:
        raise PlaceRefused(wording.NO_DEFAULT_BRANCH)
    return ref


def commit_of(repository: Repository, ref: str) -> str | None:
    """The commit ``ref`` names, or None. ``--end-of-options`` keeps a ref from being read as an
    option even if one slipped past the checks above."""
    try:
        sha = git_text(
            repository.place,
            ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
        )
    except GitFailed:
        return None
    return sha if _COMMIT.fullmatch(sha) else None


def _ref_format_ok(ref: str) -> bool:
    try:
        git_run(GitPlace(git_dir=Path("/nonexistent")), ["check-ref-format", ref])
    except GitFailed:
        return False
    return True


def worktrees_root() -> Path:
    return Path(settings.KANDEV_ACP_WORKDIR) / "worktrees"


def worktree_path_for(task_id: int) -> Path:
    # int() so that only a number ever becomes part of the path.
    return worktrees_root() / f"task-{int(task_id)}"


def branch_for(task_id: int) -> str:
    return f"{BRANCH_PREFIX}{int(task_id)}"


def admin_dir_for(repository: Repository, task_id: int) -> Path:
    """The worktree's folder in the git directory (``.git/worktrees/task-<id>``): named by git
    after the worktree's folder, which is named after the task id."""
    return repository.git_dir / "worktrees" / f"task-{int(task_id)}"


def tree_exceeds(root: Path, *, max_files: int, max_bytes: int) -> bool:
    """Whether the files under ``root`` (its own ``.git`` left out, symlinks not followed) number
    more than ``max_files`` or weigh more than ``max_bytes``: more than the app will hash into a
    git store. Stops counting as soon as it knows."""
    files = size = 0
    for folder, dirs, names in os.walk(root, followlinks=False):
        if folder == str(root):
            dirs[:] = [name for name in dirs if name != ".git"]
            names = [name for name in names if name != ".git"]
        for name in names:
            files += 1
            try:
                size += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                continue
            if files > max_files or size > max_bytes:
                return True
    return False
