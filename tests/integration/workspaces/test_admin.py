"""Projects and worktrees in the admin: a project added there passes the same checks as
project_add, and worktrees are listed read-only with their size on disk."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from sessions_app.workspaces.models import Project
from sessions_app.workspaces.services import worktree_ensure
from tests.support.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def staff(db) -> Client:
    client = Client()
    client.force_login(UserFactory(username="staff", is_staff=True, is_superuser=True))
    return client


def test_a_project_outside_the_roots_is_refused_on_its_field(staff, roots, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()

    answer = staff.post(
        "/admin/workspaces/project/add/", {"name": "x", "repo_path": str(outside), "base_ref": ""}
    )

    assert answer.status_code == 200
    assert "must be inside one of the project roots" in answer.content.decode()
    assert not Project.objects.exists()


def test_a_project_added_in_the_admin_is_stored_resolved_with_its_default_branch(
    staff, repo, roots
):
    answer = staff.post(
        "/admin/workspaces/project/add/",
        {"name": "app", "repo_path": f"{roots}/./app", "base_ref": ""},
    )

    assert answer.status_code == 302, answer.content.decode()[:2000]
    project = Project.objects.get(name="app")
    assert (project.repo_path, project.base_ref) == (str(repo), "refs/heads/main")


def test_worktrees_are_listed_with_their_size_and_cannot_be_edited(staff, bound_task):
    worktree = worktree_ensure(task_id=bound_task.pk)
    (worktree / "big.bin").write_bytes(b"x" * 300_000)

    listing = staff.get("/admin/workspaces/taskworkspace/")

    assert listing.status_code == 200
    page = listing.content.decode()
    assert f"kandev/task-{bound_task.pk}" in page
    assert re.search(r"<td class=\"field-size\">29[0-9]\.[0-9] KB</td>", page)
    change = staff.post(
        f"/admin/workspaces/taskworkspace/{bound_task.workspace.pk}/change/", {"state": "removed"}
    )
    assert change.status_code == 403
