"""Staff register projects in the admin under the same checks as project_add, and see every
task's worktree (branch, path, size on disk, state) without being able to edit one."""

from __future__ import annotations

import pytest
from django.test import Client

from sessions_app.workspaces.models import Project
from sessions_app.workspaces.services import worktree_ensure
from tests.support.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff() -> Client:
    client = Client()
    client.force_login(UserFactory(username="operator", is_staff=True, is_superuser=True))
    return client


def add_project(staff: Client, repo_path: str):
    return staff.post(
        "/admin/workspaces/project/add/",
        {"name": "web", "repo_path": repo_path, "base_ref": ""},
    )


def test_the_admin_registers_a_project_with_its_default_branch_as_base(staff, repo):
    response = add_project(staff, str(repo))

    assert response.status_code == 302
    project = Project.objects.get(name="web")
    assert project.repo_path == str(repo) and project.base_ref


def test_the_admin_refuses_a_path_outside_the_roots_and_one_with_dot_dot(staff, repo, tmp_path):
    outside = add_project(staff, str(tmp_path))
    climbing = add_project(staff, f"{repo}/../../{repo.parent.name}/{repo.name}")

    assert outside.status_code == climbing.status_code == 200  # the form again, with its error
    assert not Project.objects.filter(name="web").exists()


def test_the_worktree_list_shows_branch_and_size_and_allows_no_edit(staff, bound_task):
    path = worktree_ensure(task_id=bound_task.pk)
    (path / "big.bin").write_bytes(b"x" * 300 * 1024)

    listing = staff.get("/admin/workspaces/taskworkspace/").content.decode()

    assert f"kandev/task-{bound_task.pk}" in listing and str(path) in listing
    assert "KiB" in listing
    assert staff.get("/admin/workspaces/taskworkspace/add/").status_code == 403
