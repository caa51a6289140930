"""The task page reviews what changed in the task's worktree since its base commit, new
untracked files included, without touching the worktree's own index; the patch downloads."""

from __future__ import annotations

import pytest
from django.test import Client

from sessions_app.workspaces import review as review_module
from sessions_app.workspaces.review import worktree_patch, worktree_review
from sessions_app.workspaces.services import worktree_ensure
from tests.integration.workspaces.conftest import git

pytestmark = pytest.mark.django_db


@pytest.fixture
def worked(bound_task):
    """The agent's work: one file changed, one new file never added to git."""
    path = worktree_ensure(task_id=bound_task.pk)
    (path / "README.md").write_text("# The project\nNow with a second line\n")
    (path / "new.py").write_text("print('hello')\n")
    return path


def test_it_lists_changed_and_untracked_files_with_their_line_counts(bound_task, worked):
    review = worktree_review(task_id=bound_task.pk)

    assert review is not None
    assert [(f.path, f.added, f.removed) for f in review.files] == [
        ("README.md", 1, 0),
        ("new.py", 1, 0),
    ]
    assert "+print('hello')" in review.files[1].patch
    assert review.hidden_files == 0


def test_it_never_touches_the_worktrees_own_index(bound_task, worked):
    before = (worked / ".git").read_text()
    worktree_review(task_id=bound_task.pk)

    assert git(worked, "status", "--porcelain") == " M README.md\n?? new.py".strip()
    assert git(worked, "diff", "--cached", "--name-only") == ""
    assert (worked / ".git").read_text() == before


def test_the_task_page_shows_the_review_and_the_patch_downloads(owner, bound_task, worked):
    client = Client()
    client.force_login(owner)

    page = client.get(f"/tasks/{bound_task.pk}/").content.decode()
    patch = client.get(f"/tasks/{bound_task.pk}/patch/")

    assert "Changes in the worktree" in page and "<code>new.py</code>" in page
    assert "<span class=\"gi\">+print('hello')</span>" in page  # rendered by diff_html
    assert patch.status_code == 200
    assert patch["Content-Type"] == "text/x-diff"
    assert patch["Content-Disposition"] == f'attachment; filename="task-{bound_task.pk}.patch"'
    assert patch.content == worktree_patch(task_id=bound_task.pk)
    assert b"+++ b/new.py" in patch.content


def test_someone_elses_task_review_and_patch_answer_404(stranger, bound_task, worked):
    client = Client()
    client.force_login(stranger)

    assert client.get(f"/tasks/{bound_task.pk}/review/").status_code == 404
    assert client.get(f"/tasks/{bound_task.pk}/patch/").status_code == 404


def test_it_counts_the_files_beyond_the_cap_as_not_shown(owner, bound_task, worked, monkeypatch):
    monkeypatch.setattr(review_module, "REVIEW_MAX_FILES", 1)
    client = Client()
    client.force_login(owner)

    section = client.get(f"/tasks/{bound_task.pk}/review/").content.decode()

    assert "<code>README.md</code>" in section and "<code>new.py</code>" not in section
    assert "1 more file not shown" in section


def test_it_has_nothing_to_review_before_the_first_turn_and_for_an_unbound_task(owner, bound_task):
    assert worktree_review(task_id=bound_task.pk) is None
    client = Client()
    client.force_login(owner)
    assert "No worktree to review yet." in client.get(f"/tasks/{bound_task.pk}/").content.decode()
    assert client.get(f"/tasks/{bound_task.pk}/patch/").status_code == 404


def test_a_worktree_larger_than_the_limits_is_not_hashed_into_the_project(
    owner, bound_task, worked, repo, settings
):
    settings.KANDEV_SNAPSHOT_MAX_MB = 1
    (worked / "huge.bin").write_bytes(b"\x01" * (2 * 1024 * 1024))
    objects_before = git(repo, "count-objects", "-v")
    client = Client()
    client.force_login(owner)

    section = client.get(f"/tasks/{bound_task.pk}/review/").content.decode()

    assert worktree_review(task_id=bound_task.pk).too_large
    assert "larger than the review reads" in section and "huge.bin" not in section
    assert worktree_patch(task_id=bound_task.pk) is None
    assert git(repo, "count-objects", "-v") == objects_before  # nothing written to the store
