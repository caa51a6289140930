"""Real git repositories under a project root in tmp_path, registered as projects."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sessions_app.services.task_sessions import task_create
from sessions_app.workspaces.services import project_register
from tests.integration.acp_app.conftest import (  # noqa: F401 (the mock agent's fixtures)
    _quiet_queue,
    acp_target,
    agent_state,
    clock,
)

GIT_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@localhost",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@localhost",
}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(cwd), *args], capture_output=True, env=GIT_ENV, check=True, text=True
    )
    return done.stdout.strip()


def make_repository(path: Path, files: dict[str, str] | None = None) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in (files or {"README.md": "# The project\n", "notes.md": "notes\n"}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "first")
    return path


@pytest.fixture
def roots(tmp_path, settings) -> Path:
    root = tmp_path / "projects"
    root.mkdir()
    settings.KANDEV_PROJECT_ROOTS = (str(root),)
    settings.KANDEV_ACP_WORKDIR = tmp_path / "work"
    return root


@pytest.fixture
def repo(roots) -> Path:
    return make_repository(roots / "app")


@pytest.fixture
def project(repo, owner):
    return project_register(name="app", repo_path=str(repo), users=[owner])


@pytest.fixture
def bound_task(owner, project):
    return task_create(owner=owner, title="Fix the README", project_id=project.pk)
