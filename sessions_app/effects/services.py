"""Writes and measurements around a turn's workspace snapshots (the files live in the session's
private store under ``KANDEV_ACP_WORKDIR/snapshots``, the oids in WorkspaceSnapshot rows)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from django.conf import settings

from recovery.effects import UNKNOWN_EFFECTS, WorkspaceEffects, effects_of
from sessions_app.effects.models import WorkspaceSnapshot
from sessions_app.effects.snapshot import (
    RestorePlan,
    SnapshotLimits,
    restore_plan,
    snapshot_changes,
    snapshot_restore,
    snapshot_take,
)
from sessions_app.models import PromptGeneration
from sessions_app.workspaces.git import GitFailed


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


def session_workspace_path(*, session_id: int) -> Path:
    """The session's agent workspace on this machine (``agent.targets`` makes the same one)."""
    return Path(settings.KANDEV_ACP_WORKDIR) / f"session-{session_id}"


def turn_start_snapshot(*, session_id: int) -> WorkspaceSnapshot | None:
    """The snapshot of the last turn's first attempt: the workspace as that turn found it."""
    last = WorkspaceSnapshot.objects.filter(session_id=session_id).order_by("-generation_id")
    latest = last.values_list("generation_id", flat=True).first()
    if latest is None:
        return None
    return WorkspaceSnapshot.objects.filter(generation_id=latest).order_by("attempt").first()


def fresh_restore_plan(*, session_id: int) -> RestorePlan | None:
    """Start fresh's confirmation step: what putting the workspace back would undo (None when
    the turn's start is unknown, so there is nothing to offer)."""
    snapshot = turn_start_snapshot(session_id=session_id)
    if snapshot is None or not snapshot.tree_oid:
        return None
    return workspace_restore_plan(
        snapshot=snapshot, workspace=session_workspace_path(session_id=session_id)
    )


def fresh_restore(*, session_id: int) -> bool:
    """Start fresh, confirmed: the workspace exactly as the last turn found it. False when there
    is no snapshot to restore from (the files are then kept)."""
    snapshot = turn_start_snapshot(session_id=session_id)
    if snapshot is None or not snapshot.tree_oid:
        return False
    workspace_restore(snapshot=snapshot, workspace=session_workspace_path(session_id=session_id))
    return True
