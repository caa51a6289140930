"""Writes and measurements around a turn's workspace snapshots (the files live in the session's
private store under ``KANDEV_ACP_WORKDIR/snapshots``, the oids in WorkspaceSnapshot rows)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings

from recovery.effects import UNKNOWN_EFFECTS, WorkspaceEffects, effects_of
from sessions_app.effects import wording
from sessions_app.effects.models import WorkspaceSnapshot
from sessions_app.effects.snapshot import (
    RestorePlan,
    SnapshotLimits,
    restore_plan,
    snapshot_changes,
    snapshot_restore,
    snapshot_take,
)
from sessions_app.models import PromptGeneration, Session
from sessions_app.workspaces.git import GitFailed
from sessions_app.workspaces.models import TaskWorkspace
from sessions_app.workspaces.places import worktree_path_for
from sessions_app.workspaces.selectors import task_workspace


def snapshot_limits() -> SnapshotLimits:
    return SnapshotLimits(
        max_bytes=settings.KANDEV_SNAPSHOT_MAX_MB * 1024 * 1024,
        max_files=settings.KANDEV_SNAPSHOT_MAX_FILES,
    )


def snapshot_store_path(*, session_id: int) -> Path:
    return Path(settings.KANDEV_ACP_WORKDIR) / "snapshots" / f"session-{session_id}.git"


def workspace_snapshot_record(
    *, generation: PromptGeneration, attempt: int, workspace: Path, now: datetime
) -> WorkspaceSnapshot:
    """Snapshot ``workspace`` before an attempt; a second call for one attempt keeps the first."""
    taken = snapshot_take(
        workspace=workspace,
        store=snapshot_store_path(session_id=generation.session_id),
        limits=snapshot_limits(),
    )
    snapshot, _ = WorkspaceSnapshot.objects.get_or_create(
        generation=generation,
        attempt=attempt,
        defaults={
            "session_id": generation.session_id,
            "taken_at": now,
            "tree_oid": taken.tree or "",
            "problem": taken.problem or "",
        },
    )
    return snapshot


def workspace_effects_measure(
    *, snapshot: WorkspaceSnapshot | None, workspace: Path, non_read_granted: bool
) -> WorkspaceEffects:
    """What the attempt changed since ``snapshot``; unknown when either side cannot be read."""
    if snapshot is None or not snapshot.tree_oid:
        return UNKNOWN_EFFECTS
    store = snapshot_store_path(session_id=snapshot.session_id)
    now = snapshot_take(workspace=workspace, store=store, limits=snapshot_limits())
    if now.tree is None:
        return UNKNOWN_EFFECTS
    try:
        changes = snapshot_changes(store=store, before=snapshot.tree_oid, after=now.tree)
    except GitFailed:
        return UNKNOWN_EFFECTS
    return effects_of(changed=[path for _, path in changes], non_read_granted=non_read_granted)


def workspace_restore_plan(*, snapshot: WorkspaceSnapshot, workspace: Path) -> RestorePlan | None:
    """What Start fresh's restore would undo (the confirmation step), or None when unknown."""
    store = snapshot_store_path(session_id=snapshot.session_id)
    now = snapshot_take(workspace=workspace, store=store, limits=snapshot_limits())
    if not snapshot.tree_oid or now.tree is None:
        return None
    return restore_plan(store=store, before=snapshot.tree_oid, now=now.tree)


def workspace_restore(*, snapshot: WorkspaceSnapshot, workspace: Path) -> None:
    """Put the workspace back exactly as at ``snapshot``. Raises GitFailed."""
    if not snapshot.tree_oid:
        raise GitFailed("the turn's start was not snapshotted")
    snapshot_restore(
        workspace=workspace,
        store=snapshot_store_path(session_id=snapshot.session_id),
        tree=snapshot.tree_oid,
        limits=snapshot_limits(),
    )


def session_workspace_path(*, session_id: int) -> Path | None:
    """The session's agent workspace on this machine, as ``agent.targets`` chooses it: its task's
    worktree when the task is bound to a project, else the session's private folder. None when
    the worktree is not there (archived, broken, never made): nothing to measure or put back."""
    task_id = Session.objects.filter(pk=session_id).values_list("task_id", flat=True).first()
    binding = task_workspace(task_id=task_id) if task_id is not None else None
    if binding is None:
        return Path(settings.KANDEV_ACP_WORKDIR) / f"session-{session_id}"
    if binding.state != TaskWorkspace.State.READY:
        return None
    return worktree_path_for(binding.task_id)


def turn_start_snapshot(*, session_id: int) -> WorkspaceSnapshot | None:
    """The snapshot of the session's last turn's first attempt: the workspace as that turn found
    it. None when the last turn took none (a direct provider's turn, say): an older turn's start
    is never what Start fresh puts back."""
    last = PromptGeneration.objects.filter(session_id=session_id).order_by("-number").first()
    if last is None:
        return None
    return WorkspaceSnapshot.objects.filter(generation=last).order_by("attempt").first()


@dataclass(frozen=True, slots=True)
class FreshRestoreOffer:
    """What the recovery card says about putting the workspace back: ``files`` the restore would
    touch (0: the turn changed nothing, so there is nothing to offer), or ``unavailable``, the
    sentence saying why it cannot be offered. Both empty: the turn had no workspace to speak of."""

    files: int = 0
    unavailable: str = ""

    def as_payload(self) -> dict[str, Any] | None:
        if self.unavailable:
            return {"unavailable": self.unavailable}
        return {"files": self.files} if self.files else None


NO_OFFER = FreshRestoreOffer()


def fresh_restore_offer(*, session_id: int) -> FreshRestoreOffer:
    """Whether Start fresh can offer to put the workspace back, and if not, why (the card)."""
    snapshot = turn_start_snapshot(session_id=session_id)
    if snapshot is None:
        return NO_OFFER
    if not snapshot.tree_oid:
        why = (
            wording.RESTORE_UNAVAILABLE_TOO_LARGE
            if snapshot.problem == WorkspaceSnapshot.Problem.TOO_LARGE
            else wording.RESTORE_UNAVAILABLE_NOT_RECORDED
        )
        return FreshRestoreOffer(unavailable=why)
    plan = fresh_restore_plan(session_id=session_id)
    if plan is None:
        return FreshRestoreOffer(unavailable=wording.RESTORE_UNAVAILABLE_UNREADABLE)
    return FreshRestoreOffer(files=plan.count)


def fresh_restore_plan(*, session_id: int) -> RestorePlan | None:
    """Start fresh's confirmation step: what putting the workspace back would undo (None when
    the turn's start or the workspace now is unknown, so there is nothing to offer)."""
    snapshot = turn_start_snapshot(session_id=session_id)
    workspace = session_workspace_path(session_id=session_id)
    if snapshot is None or not snapshot.tree_oid or workspace is None:
        return None
    try:
        return workspace_restore_plan(snapshot=snapshot, workspace=workspace)
    except GitFailed:
        return None


def fresh_restore(*, session_id: int) -> None:
    """Start fresh, confirmed: the workspace exactly as the last turn found it. Raises
    RestoreUnavailable when there is no plan (nothing recorded, or the workspace is gone) and
    GitFailed when git cannot put it back."""
    snapshot = turn_start_snapshot(session_id=session_id)
    workspace = session_workspace_path(session_id=session_id)
    if snapshot is None or not snapshot.tree_oid or workspace is None:
        raise RestoreUnavailable(session_id)
    workspace_restore(snapshot=snapshot, workspace=workspace)


class RestoreUnavailable(Exception):
    """Start fresh was asked to put the workspace back, but the last turn's start is unknown."""
