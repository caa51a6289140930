"""The host's git never runs what an agent planted in its work tree."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sessions_app.workspaces.git import GitFailed, GitPlace, git_text


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git("init", "-q", "-b", "main", cwd=repo)
    (repo / "a.txt").write_text("one\n")
    _git("add", "a.txt", cwd=repo)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first", cwd=repo)
    return repo


def test_it_reads_the_named_repository(repo: Path) -> None:
    head = git_text(GitPlace(git_dir=repo / ".git", work_tree=repo), ["rev-parse", "HEAD"])
    assert len(head) == 40


def test_a_planted_git_file_and_its_fsmonitor_are_ignored(repo: Path, tmp_path: Path) -> None:
    # The agent's own repository, whose config would run a command on every status.
    evil = tmp_path / "evil"
    evil.mkdir()
    _git("init", "-q", cwd=evil)
    marker = tmp_path / "ran"
    _git("config", "core.fsmonitor", f"touch {marker}; false", cwd=evil)
    _git("config", "core.hooksPath", str(tmp_path), cwd=evil)
    work = tmp_path / "work"
    work.mkdir()
    (work / ".git").write_text(f"gitdir: {evil / '.git'}\n")
    (work / "b.txt").write_text("two\n")

    status = git_text(
        GitPlace(git_dir=repo / ".git", work_tree=work), ["status", "--porcelain", "-uall"]
    )

    assert not marker.exists()
    assert "b.txt" in status and ".git" not in status.split()


def test_a_failure_names_the_subcommand_and_status(tmp_path: Path) -> None:
    with pytest.raises(GitFailed) as failed:
        git_text(GitPlace(git_dir=tmp_path / "missing"), ["rev-parse", "HEAD"])
    assert failed.value.status == 128
    assert failed.value.detail.startswith("git rev-parse exited with status 128")
