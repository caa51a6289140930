"""Snapshots nobody can restore any more go, rows and git objects alike.

Start fresh only ever puts back the session's last turn's start (``turn_start_snapshot``), and a
running turn only compares against its own attempts. So once a turn is settled, its snapshots
are kept only while it is the last turn, and then only its first attempt's. The rest are deleted,
and the session's private store is garbage-collected: the trees still needed are pinned by refs
(``refs/kandev/snapshots/<row id>``, one per kept row), everything else unreachable is pruned.

``git gc --prune=now`` deletes loose objects a concurrent ``git add`` has just written, so a store
is collected only under its session's row lock with no generation active: a new turn opens under
that lock, and only a running turn writes snapshots. Cost is bounded per sweep: at most
KANDEV_SNAPSHOT_PRUNE_BATCH sessions, each gc single-threaded and time-limited. Stores whose
session was deleted are removed whole.
"""

from __future__ import annotations

import logging
import re
import shutil
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import F, OuterRef, Q, QuerySet, Subquery

from sessions_app.effects.models import WorkspaceSnapshot
from sessions_app.effects.services import snapshot_store_path
from sessions_app.models import PromptGeneration, Session
from sessions_app.workspaces.git import GitFailed, GitPlace, git_run, git_text

logger = logging.getLogger(__name__)

KEEP_REF_PREFIX = "refs/kandev/snapshots/"
GC_TIMEOUT_S = 120.0
_STORE_NAME = re.compile(r"session-([0-9]+)\.git")


@dataclass(frozen=True, slots=True)
class PruneReport:
    sessions: int  # stores collected
    snapshots: int  # rows deleted
    stores_removed: int  # stores of deleted sessions


def snapshots_prunable() -> QuerySet[WorkspaceSnapshot]:
    """Snapshots of settled turns that are not the start of their session's last turn."""
    last_turn = (
        PromptGeneration.objects.filter(session_id=OuterRef("session_id"))
        .order_by("-number")
        .values("id")[:1]
    )
    first_attempt = (
        WorkspaceSnapshot.objects.filter(generation_id=OuterRef("generation_id"))
        .order_by("attempt")
        .values("attempt")[:1]
    )
    return (
        WorkspaceSnapshot.objects.exclude(generation__state__in=PromptGeneration.ACTIVE_STATES)
        .annotate(last_turn=Subquery(last_turn), first_attempt=Subquery(first_attempt))
        .exclude(Q(generation_id=F("last_turn")) & Q(attempt=F("first_attempt")))
    )


def snapshots_prune(*, batch: int | None = None) -> PruneReport:
    """One sweep (the beat task): prune up to ``batch`` sessions' snapshots and their stores."""
    limit = settings.KANDEV_SNAPSHOT_PRUNE_BATCH if batch is None else batch
    session_ids = list(
        snapshots_prunable().order_by().values_list("session_id", flat=True).distinct()[:limit]
    )
    sessions = deleted = 0
    for session_id in session_ids:
        pruned = session_snapshots_prune(session_id=session_id)
        if pruned is not None:
            sessions += 1
            deleted += pruned
    return PruneReport(
        sessions=sessions, snapshots=deleted, stores_removed=orphan_stores_remove(limit=limit)
    )


def session_snapshots_prune(*, session_id: int) -> int | None:
    """Prune one session's snapshots and collect its store; the number of rows deleted, or None
    when it was skipped (a generation is active, or the session is gone)."""
    with transaction.atomic():
        session = Session.objects.select_for_update(no_key=True).filter(pk=session_id).first()
        if session is None:
            return None
        active = PromptGeneration.objects.filter(
            session_id=session_id, state__in=PromptGeneration.ACTIVE_STATES
        )
        if active.exists():
            return None  # its attempts are writing objects no ref pins yet: next sweep
        deleted, _ = snapshots_prunable().filter(session_id=session_id).delete()
        kept = dict(
            WorkspaceSnapshot.objects.filter(session_id=session_id)
            .exclude(tree_oid="")
            .values_list("pk", "tree_oid")
        )
        store = snapshot_store_path(session_id=session_id)
        if (store / "HEAD").is_file():
            try:
                _store_collect(GitPlace(git_dir=store), keep=kept)
            except GitFailed as failed:
                # The rows are gone either way; the objects wait for the next collection.
                logger.warning("snapshot store of session %s not collected: %s", session_id, failed)
    return deleted


def _store_collect(place: GitPlace, *, keep: dict[int, str]) -> None:
    """Pin exactly ``keep``'s trees with refs, then prune everything else unreachable."""
    wanted = {f"{KEEP_REF_PREFIX}{pk}": oid for pk, oid in keep.items()}
    existing = git_text(place, ["for-each-ref", "--format=%(refname)", KEEP_REF_PREFIX]).split()
    commands = [f"delete {ref}" for ref in existing if ref not in wanted]
    commands += [f"update {ref} {oid}" for ref, oid in wanted.items()]
    if commands:
        git_run(place, ["update-ref", "--stdin"], stdin="\n".join(commands).encode() + b"\n")
    git_run(
        place,
        ["-c", "pack.threads=1", "-c", "gc.auto=0", "gc", "--quiet", "--prune=now"],
        timeout_s=GC_TIMEOUT_S,
    )


def orphan_stores_remove(*, limit: int) -> int:
    """Remove up to ``limit`` stores whose session no longer exists (deleted with its rows)."""
    root = snapshot_store_path(session_id=0).parent
    if not root.is_dir():
        return 0
    found = {}
    for entry in root.iterdir():
        match = _STORE_NAME.fullmatch(entry.name)
        if match and entry.is_dir() and not entry.is_symlink():
            found[int(match.group(1))] = entry
    alive = set(Session.objects.filter(pk__in=found).values_list("pk", flat=True))
    removed = 0
    for session_id in sorted(set(found) - alive)[:limit]:
        shutil.rmtree(found[session_id], ignore_errors=True)
        removed += 1
    return removed
