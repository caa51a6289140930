"""A bound task's agent, confined, tried from the inside (point 7): a shell started with the
bubblewrap command line sandbox_command builds for the task's worktree (as targets.py builds it)
can write its own worktree and read its history, and cannot write the main checkout, another
task's worktree, any ref, a hook or the config, neither directly nor through git. The same
attacks succeed when the repository is bound writable (the negative control), so the tests can
fail."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from recovery.providers.acp.egress import egress_bridges
from sessions_app.agent.sandbox import SandboxPlan, sandbox_command
from sessions_app.services.task_sessions import task_create
from sessions_app.workspaces.services import worktree_ensure, worktree_git_dir
from tests.integration.workspaces.conftest import git

pytestmark = pytest.mark.django_db(transaction=True)


def inside(plan: SandboxPlan, script: str) -> tuple[int, str]:
    confined = sandbox_command(plan, ("/bin/sh", "-c", script))

    async def run() -> tuple[int, str]:
        async with egress_bridges(confined.egress):
            process = await asyncio.create_subprocess_exec(
                *confined.command,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                env={"PATH": "/usr/bin:/bin"},
            )
            output, _ = await asyncio.wait_for(process.communicate(), 60)
            return process.returncode or 0, output.decode(errors="replace")

    return asyncio.run(run())


@pytest.fixture
def two_tasks(owner, project):
    mine = task_create(owner=owner, title="Mine", project_id=project.pk)
    other = task_create(owner=owner, title="Other", project_id=project.pk)
    return worktree_ensure(task_id=mine.pk), worktree_ensure(task_id=other.pk), mine


@pytest.fixture
def plan(two_tasks, tmp_path) -> SandboxPlan:
    worktree, _, mine = two_tasks
    home = tmp_path / "home"
    home.mkdir()
    return SandboxPlan(workspace=worktree, home=home, git_dir=worktree_git_dir(task_id=mine.pk))


def attacks(repo: Path, other: Path, admin: Path) -> str:
    """Each git-directory line prints WROTE <what> when the write went through. The checkout and
    the other worktree are judged on the host: inside, their parent folders may be the
    sandbox's own private /tmp, where a write lands harmlessly."""
    g = f"{repo}/.git"
    return "; ".join(
        [
            "cd /workspace",
            f"echo evil > {repo}/README.md 2>/dev/null",
            f"echo evil > {other}/README.md 2>/dev/null",
            f"echo 0000000000000000000000000000000000000000 > {g}/refs/heads/main 2>/dev/null "
            "&& echo 'WROTE main ref'",
            "git update-ref refs/heads/main HEAD~0 2>/dev/null "
            "&& git commit -q --allow-empty -m x 2>/dev/null "
            "&& git update-ref refs/heads/main HEAD "
            "2>/dev/null && echo 'WROTE main ref by git'",
            "git branch -f main HEAD 2>/dev/null && git tag planted 2>/dev/null "
            "&& echo 'WROTE a ref by git'",
            f"printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > {g}/hooks/post-checkout 2>/dev/null "
            "&& echo 'WROTE hook'",
            "git config core.fsmonitor 'touch /tmp/pwned' 2>/dev/null "
            "&& echo 'WROTE config by git'",
            f"echo '[core]' >> {g}/config 2>/dev/null && echo 'WROTE config'",
            f"echo ref: refs/heads/main > {admin}/HEAD 2>/dev/null && echo 'WROTE admin HEAD'",
            f"echo {repo} > {admin}/commondir 2>/dev/null && echo 'WROTE admin commondir'",
            "true",
        ]
    )


def test_the_agent_writes_its_worktree_and_reads_its_history(plan):
    status, output = inside(
        plan,
        "cd /workspace && echo made > new.txt && echo changed >> README.md && "
        "git status --porcelain && git log --oneline | wc -l && git diff --stat",
    )

    assert status == 0, output
    assert (plan.workspace / "new.txt").read_text() == "made\n"
    assert "?? new.txt" in output
    assert " M README.md" in output
    assert "1 file changed" in output


def test_the_agent_cannot_commit_stage_or_move_a_branch_even_its_own(plan):
    _, output = inside(
        plan,
        "cd /workspace && echo x > a.txt && (git add a.txt 2>&1; git commit -qm x 2>&1; "
        "git stash 2>&1; git checkout -b other 2>&1); git rev-parse --abbrev-ref HEAD",
    )

    assert "Read-only file system" in output
    assert output.strip().splitlines()[-1] == plan.workspace.name.replace("task-", "kandev/task-")
    assert git(plan.workspace, "status", "--porcelain") == "?? a.txt"


def test_the_agent_cannot_reach_the_checkout_other_worktrees_refs_hooks_or_config(
    plan, two_tasks, repo, tmp_path
):
    _, other, _ = two_tasks
    admin = plan.git_dir / "worktrees" / plan.workspace.name
    main_before = git(repo, "rev-parse", "refs/heads/main")
    config_before = (repo / ".git" / "config").read_text()

    status, output = inside(plan, attacks(repo, other, admin))

    assert status == 0, output
    assert "WROTE" not in output
    assert git(repo, "rev-parse", "refs/heads/main") == main_before
    assert git(repo, "tag", "--list") == ""
    assert (repo / ".git" / "config").read_text() == config_before
    assert not (repo / ".git" / "hooks" / "post-checkout").exists()
    assert (repo / "README.md").read_text() == "# The project\n"
    assert (other / "README.md").read_text() == "# The project\n"
    assert (admin / "HEAD").read_text().startswith("ref: refs/heads/kandev/task-")


def test_the_same_attacks_succeed_when_the_repository_is_bound_writable(plan, two_tasks, repo):
    """Negative control: the wrong binding (the whole repository writable, as a naive 'mount the
    project' would) lets every git attack through, so the test above can fail."""
    _, other, _ = two_tasks
    admin = plan.git_dir / "worktrees" / plan.workspace.name
    wrong = SandboxPlan(workspace=plan.workspace, home=plan.home, writable_files=(repo,))

    _, output = inside(wrong, attacks(repo, other, admin))

    assert (repo / "README.md").read_text() == "evil\n"
    assert "WROTE hook" in output
    assert "WROTE config by git" in output
    assert "WROTE main ref" in output
    assert "WROTE admin commondir" in output
    assert (repo / ".git" / "hooks" / "post-checkout").exists()
