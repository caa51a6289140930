"""What a failed agent attempt did to its workspace, as the judge needs it: a frozen value.

The app snapshots the workspace before each attempt and compares it after a failure; the judge
never reads a disk. Fail closed: an effect that could not be measured (no snapshot, a workspace
too large to snapshot, git failing) is ``known=False`` and counts as an effect.
"""

from __future__ import annotations

from dataclasses import dataclass

CHANGED_LIST_LIMIT = 20  # the paths a card lists; the count stays exact
# Permission kinds that only look: granting one of these is not an effect.
READ_ONLY_KINDS = frozenset({"read", "search", "think", "fetch"})


@dataclass(frozen=True, slots=True)
class WorkspaceEffects:
    known: bool  # both snapshots exist and were compared
    changed: tuple[str, ...] = ()  # capped at CHANGED_LIST_LIMIT, sorted
    changed_count: int = 0  # exact, even when ``changed`` is capped
    non_read_granted: bool = False  # a granted permission for a tool that can write

    @property
    def clean(self) -> bool:
        return self.known and self.changed_count == 0 and not self.non_read_granted


UNKNOWN_EFFECTS = WorkspaceEffects(known=False)


def effects_of(
    *, changed: list[str] | tuple[str, ...], non_read_granted: bool = False
) -> WorkspaceEffects:
    ordered = tuple(sorted(set(changed)))
    return WorkspaceEffects(
        known=True,
        changed=ordered[:CHANGED_LIST_LIMIT],
        changed_count=len(ordered),
        non_read_granted=non_read_granted,
    )


def granted_is_effect(*, granted: bool, tool_kind: str | None) -> bool:
    """A granted permission is an effect unless its tool is known to only look."""
    return granted and (tool_kind or "") not in READ_ONLY_KINDS
