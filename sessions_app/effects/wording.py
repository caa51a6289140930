"""What the recovery card and Start fresh's confirmation say about putting a workspace back.

Calm and exact: counts are numbers with the right noun ("1 file", "3 files"), and a restore that
cannot be offered says why in one sentence, so the person knows their files are simply kept.
"""

from __future__ import annotations

from recovery.wording import files_counted


def restore_offer(count: int) -> str:
    """The card's line when the failed turn changed the workspace and a restore is possible."""
    return (
        f"This turn changed {files_counted(count)}. Start fresh can keep them, or put the "
        "workspace back exactly as the turn found it (you see the list before anything changes)."
    )


RESTORE_UNAVAILABLE_TOO_LARGE = (
    "Start fresh cannot put the workspace back: it was too large to record when the turn "
    "started. Your files are kept as they are."
)
RESTORE_UNAVAILABLE_NOT_RECORDED = (
    "Start fresh cannot put the workspace back: its state could not be recorded when the turn "
    "started. Your files are kept as they are."
)
RESTORE_UNAVAILABLE_UNREADABLE = (
    "Start fresh cannot put the workspace back: its current state cannot be read. Your files "
    "are kept as they are."
)
NO_RESTORE_PLAN = (
    "the workspace cannot be put back: the turn's starting state is unknown or the workspace "
    "is gone"
)
RESTORE_FAILED = "the workspace could not be put back; your files are as they were"
RESTORE_ONLY_WITH_FRESH = "only Start fresh can put the workspace back"


def confirm_summary(count: int) -> str:
    return (
        f"Putting the workspace back changes {files_counted(count)}, then sends your last "
        "message again in a new context."
    )


def remove_heading(count: int) -> str:
    return f"Removed: {files_counted(count)} new since the turn started"


def revert_heading(count: int) -> str:
    return f"Restored: {files_counted(count)} changed since the turn started, back to how they were"


def restore_heading(count: int) -> str:
    return f"Brought back: {files_counted(count)} deleted since the turn started"


def more_not_listed(count: int) -> str:
    return f"and {files_counted(count)} more, not listed here"


NOTHING_TO_PUT_BACK = (
    "The workspace is already as the turn found it: there is nothing to put back. Start fresh "
    "keeps it as it is."
)
