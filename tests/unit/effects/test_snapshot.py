"""A workspace snapshot sees every kind of change an agent can make, and a restore puts the
workspace back byte for byte without ever writing outside it. Real git, real files."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sessions_app.effects.snapshot import (
    SnapshotLimits,
    restore_plan,
    snapshot_changes,
    snapshot_restore,
    snapshot_take,
)

LIMITS = SnapshotLimits(max_bytes=10 * 1024 * 1024, max_files=1000)


def _tree_state(root: Path) -> dict[str, tuple[str, bytes | str, int]]:
    """Every entry under ``root`` except ``.git``: kind, content or link target, mode bits."""
    state = {}
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not (dirpath == str(root) and d == ".git")]
        for name in [*files, *[d for d in dirs if os.path.islink(os.path.join(dirpath, d))]]:
            path = Path(dirpath, name)
            rel = str(path.relative_to(root))
            if path.is_symlink():
                state[rel] = ("link", os.readlink(path), 0)
            else:
                state[rel] = ("file", path.read_bytes(), path.stat().st_mode & 0o111)
    return state


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "notes.txt").write_text("keep\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "logo.bin").write_bytes(bytes(range(256)))
    (root / ".gitignore").write_text("*.log\n")
    return root


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "snapshots" / "session-1.git"


def _changes(workspace: Path, store: Path, act) -> list[tuple[str, str]]:
    before = snapshot_take(workspace=workspace, store=store, limits=LIMITS).tree
    act(workspace)
    after = snapshot_take(workspace=workspace, store=store, limits=LIMITS).tree
    assert before and after
    return snapshot_changes(store=store, before=before, after=after)


@pytest.mark.parametrize(
    ("act", "expected"),
    [
        (lambda w: (w / "new.txt").write_text("x"), [("A", "new.txt")]),
        (lambda w: (w / "notes.txt").write_text("changed\n"), [("M", "notes.txt")]),
        (lambda w: (w / "notes.txt").unlink(), [("D", "notes.txt")]),
        (
            lambda w: (
                (w / "deep" / "er").mkdir(parents=True),
                (w / "deep/er/f.txt").write_text(""),
            ),
            [("A", "deep/er/f.txt")],
        ),
        (lambda w: (w / "run.sh").chmod(0o755), [("M", "run.sh")]),
        (lambda w: (w / "link").symlink_to("/etc/passwd"), [("A", "link")]),
        (lambda w: (w / "debug.log").write_text("ignored"), [("A", "debug.log")]),
        (lambda w: (w / "logo.bin").write_bytes(b"\x00\xff" * 10), [("M", "logo.bin")]),
        (lambda w: (w / "empty").mkdir(), []),
    ],
    ids=[
        "added",
        "modified",
        "deleted",
        "new-folder",
        "exec-bit",
        "symlink",
        "gitignored",
        "binary",
        "empty-dir-is-not-an-effect",
    ],
)
def test_it_sees_the_change_when_the_agent_touches_a_file(workspace, store, act, expected):
    assert _changes(workspace, store, act) == expected


def test_it_ignores_only_the_workspaces_own_git_entry_when_the_workspace_is_a_repository(
    workspace, store
):
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)

    def act(w: Path) -> None:
        (w / ".git" / "description").write_text("changed by the agent")
        (w / "notes.txt").write_text("changed\n")

    assert _changes(workspace, store, act) == [("M", "notes.txt")]


def test_it_reports_unknown_when_the_workspace_is_too_large(workspace, store):
    small = SnapshotLimits(max_bytes=10 * 1024 * 1024, max_files=3)

    snapshot = snapshot_take(workspace=workspace, store=store, limits=small)

    assert (snapshot.tree, snapshot.problem) == (None, "too_large")


def test_it_never_writes_into_the_workspace_when_it_snapshots(workspace, store):
    before = _tree_state(workspace)

    snapshot_take(workspace=workspace, store=store, limits=LIMITS)

    assert _tree_state(workspace) == before
    assert not (workspace / ".git").exists()


def test_it_restores_the_workspace_byte_for_byte_after_every_kind_of_change(workspace, store):
    start = _tree_state(workspace)
    tree = snapshot_take(workspace=workspace, store=store, limits=LIMITS).tree
    (workspace / "notes.txt").write_text("changed\n")
    (workspace / "logo.bin").unlink()
    (workspace / "run.sh").chmod(0o755)
    (workspace / "new" / "folder").mkdir(parents=True)
    (workspace / "new" / "folder" / "f.txt").write_text("new")
    (workspace / "debug.log").write_text("ignored but written")
    (workspace / "link").symlink_to("notes.txt")

    now = snapshot_take(workspace=workspace, store=store, limits=LIMITS).tree
    plan = restore_plan(store=store, before=tree, now=now)
    assert (plan.remove, plan.restore, plan.revert) == (
        ("debug.log", "link", "new/folder/f.txt"),
        ("logo.bin",),
        ("notes.txt", "run.sh"),
    )
    snapshot_restore(workspace=workspace, store=store, tree=tree, limits=LIMITS)

    assert _tree_state(workspace) == start
    assert not (workspace / "new").exists()


def test_it_never_writes_outside_the_workspace_through_a_planted_symlink(
    workspace, store, tmp_path
):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "app.py").write_text("theirs\n")
    tree = snapshot_take(workspace=workspace, store=store, limits=LIMITS).tree
    start = _tree_state(workspace)
    # The agent replaces a folder and a file with symlinks pointing out of the workspace.
    (workspace / "src" / "app.py").unlink()
    (workspace / "src").rmdir()
    (workspace / "src").symlink_to(outside)
    (workspace / "notes.txt").unlink()
    (workspace / "notes.txt").symlink_to(outside / "app.py")

    snapshot_restore(workspace=workspace, store=store, tree=tree, limits=LIMITS)

    assert _tree_state(workspace) == start
    assert (outside / "app.py").read_text() == "theirs\n"
    assert sorted(p.name for p in outside.iterdir()) == ["app.py"]
