"""Every sentence a person reads about a project or a task's worktree."""

from __future__ import annotations

PROJECT_UNKNOWN = "no such project"
PROJECT_UNAVAILABLE = "is not available now (its repository is missing); ask an operator"
NO_ROOTS = (
    "No project roots are configured: set KANDEV_PROJECT_ROOTS to the directories (separated by "
    "':') that projects may live under."
)
OUTSIDE_ROOTS = "The repository must be inside one of the project roots (KANDEV_PROJECT_ROOTS)."
NOT_ABSOLUTE = "The repository path must be absolute."
NUL_IN_PATH = "The repository path may not contain a NUL character."
NOT_A_REPOSITORY = "This is not a git repository with a working tree (its .git folder is missing)."
BAD_REF = "This is not a branch, tag or commit of the repository."
NO_DEFAULT_BRANCH = "The repository has no default branch to start from; name one with --base."

REPOSITORY_GONE = (
    "The project's repository is no longer where it was registered, so the agent cannot run in "
    "this task's worktree. Ask an operator to restore it."
)
WORKTREE_GONE = (
    "This task's worktree was deleted or damaged outside the app, so the agent was not started. "
    "Ask an operator to restore it, or bind a new task."
)
WORKTREE_REMOVED = "This task's worktree was removed when the task was archived."
WORKSPACE_BUSY = "Waiting for the other session of this task to finish"


def workspace_waiting(ahead: int) -> str:
    """The queued line for a prompt held behind another session's turn in the same worktree."""
    if ahead <= 0:
        return WORKSPACE_BUSY
    return f"{WORKSPACE_BUSY} · {ahead} ahead"


def files_not_shown(count: int) -> str:
    return f"{count} more file{'s' if count != 1 else ''} not shown"


REVIEW_NOT_YET = "No worktree yet: the task's first turn creates it from the project's base."
REVIEW_NO_CHANGES = "No changes: the worktree is exactly as the task's base commit."
REVIEW_UNREADABLE = (
    "The worktree cannot be read (its repository or folder is missing); an operator can restore it."
)


def review_removed(branch: str) -> str:
    return f"The worktree was removed when the task was archived; its branch {branch} is kept."


TASK_BUSY_ARCHIVE = (
    "cannot happen while an agent is working on this task (a prompt is queued, running or waiting "
    "for an approval): stop it or let it finish first"
)
