"""Snapshots no Start fresh can use any more are pruned, rows and git objects: only the last
turn's start survives once turns are settled, and it still restores. A session with a turn at
work is left alone (its attempts write objects no ref pins yet); a deleted session's store goes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from django.utils import timezone

from sessions_app.effects.models import WorkspaceSnapshot
from sessions_app.effects.pruning import snapshots_prune
from sessions_app.effects.services import (
    fresh_restore,
    snapshot_store_path,
    workspace_snapshot_record,
)
from sessions_app.models import PromptGeneration
from sessions_app.services import prompt_submit
from sessions_app.services.lifecycle.generation import generation_claim, generation_end
from sessions_app.tasks import prune_snapshots
from tests.support.factories import SessionFactory

pytestmark = pytest.mark.django_db

State = PromptGeneration.State


@pytest.fixture
def workspace(settings, chat) -> Path:
    path = Path(settings.KANDEV_ACP_WORKDIR) / f"session-{chat.pk}"
    path.mkdir(parents=True)
    return path


def turn(chat, owner, workspace: Path, text: str, *, attempts: int = 1, end: bool = True):
    """A turn that snapshots ``attempts`` times, writing ``text`` into the workspace first."""
    generation = generation_claim(
        generation_id=prompt_submit(session=chat, user=owner, text=text).pk
    )
    for attempt in range(1, attempts + 1):
        (workspace / "notes.md").write_text(f"{text} {attempt}\n")
        workspace_snapshot_record(
            generation=generation, attempt=attempt, workspace=workspace, now=timezone.now()
        )
    if end:
        generation_end(generation=generation, state=State.FAILED, error_code="overloaded")
    return generation


def object_exists(store: Path, oid: str) -> bool:
    done = subprocess.run(
        ["git", "--git-dir", str(store), "cat-file", "-e", oid],
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"},
        check=False,
    )
    return done.returncode == 0


def test_only_the_last_turns_start_survives_and_it_still_restores(chat, owner, workspace):
    first = turn(chat, owner, workspace, "first", attempts=2)
    last = turn(chat, owner, workspace, "last", attempts=2)
    old_trees = [s.tree_oid for s in WorkspaceSnapshot.objects.filter(generation=first)]
    later_attempt = WorkspaceSnapshot.objects.get(generation=last, attempt=2).tree_oid
    store = snapshot_store_path(session_id=chat.pk)

    report = snapshots_prune()

    kept = WorkspaceSnapshot.objects.get(session=chat)
    assert (kept.generation_id, kept.attempt) == (last.pk, 1)
    assert (report.sessions, report.snapshots) == (1, 3)
    assert not any(object_exists(store, oid) for oid in [*old_trees, later_attempt])
    assert object_exists(store, kept.tree_oid)
    (workspace / "notes.md").write_text("the agent's\n")
    (workspace / "new.md").write_text("new\n")
    fresh_restore(session_id=chat.pk)
    assert sorted(p.name for p in workspace.iterdir()) == ["notes.md"]
    assert (workspace / "notes.md").read_text() == "last 1\n"


def test_a_second_sweep_finds_nothing_and_keeps_the_last_start(chat, owner, workspace):
    turn(chat, owner, workspace, "first")
    last = turn(chat, owner, workspace, "last")
    snapshots_prune()

    report = snapshots_prune()

    assert (report.sessions, report.snapshots) == (0, 0)
    kept = WorkspaceSnapshot.objects.get(session=chat)
    assert kept.generation_id == last.pk
    assert object_exists(snapshot_store_path(session_id=chat.pk), kept.tree_oid)


def test_a_session_with_a_turn_at_work_is_left_alone(chat, owner, workspace):
    turn(chat, owner, workspace, "first", attempts=2)
    running = turn(chat, owner, workspace, "second", end=False)
    trees = list(WorkspaceSnapshot.objects.values_list("tree_oid", flat=True))

    report = snapshots_prune()

    assert report.snapshots == 0
    assert WorkspaceSnapshot.objects.filter(session=chat).count() == 3
    assert all(object_exists(snapshot_store_path(session_id=chat.pk), t) for t in trees)
    generation_end(generation=running, state=State.FAILED, error_code="overloaded")
    assert snapshots_prune().snapshots == 2


def test_a_deleted_sessions_store_is_removed(chat, owner, workspace, acp_target):
    turn(chat, owner, workspace, "first")
    other = SessionFactory(owner=owner, target=acp_target)
    other_store = snapshot_store_path(session_id=other.pk)
    other_store.mkdir(parents=True)
    (other_store / "HEAD").write_text("ref: refs/heads/main\n")
    store = snapshot_store_path(session_id=chat.pk)

    chat.delete()
    report = snapshots_prune()

    assert report.stores_removed == 1
    assert not store.exists()
    assert other_store.exists()
    assert not WorkspaceSnapshot.objects.exists()


def test_the_beat_task_prunes(chat, owner, workspace, settings):
    turn(chat, owner, workspace, "first")
    turn(chat, owner, workspace, "last")

    assert settings.CELERY_BEAT_SCHEDULE["prune-snapshots"]["task"] == prune_snapshots.name
    assert prune_snapshots.apply().get() == 1
    assert WorkspaceSnapshot.objects.filter(session=chat).count() == 1


def test_one_sweep_collects_at_most_its_batch_of_sessions(chat, owner, workspace, acp_target):
    other = SessionFactory(owner=owner, target=acp_target)
    other_workspace = workspace.parent / f"session-{other.pk}"
    other_workspace.mkdir()
    for session, place in ((chat, workspace), (other, other_workspace)):
        turn(session, owner, place, "first")
        turn(session, owner, place, "last")

    assert snapshots_prune(batch=1).sessions == 1
    assert WorkspaceSnapshot.objects.count() == 3
    assert snapshots_prune(batch=1).sessions == 1
    assert WorkspaceSnapshot.objects.count() == 2
