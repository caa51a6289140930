"""The task page's review: the worktree against the task's base commit, new, changed and deleted
files with their lines, read through a temporary index (the worktree's own index, HEAD and
branch untouched), a patch that applies, live over the board socket, and nobody else's."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.test import Client
from django.utils.html import escape

from kandev_web.asgi import application
from sessions_app.event_types import board_group_name
from sessions_app.services.task_sessions import task_archive
from sessions_app.workspaces.models import TaskWorkspace
from sessions_app.workspaces.review import worktree_review
from sessions_app.workspaces.selectors import task_workspace
from sessions_app.workspaces.services import worktree_ensure
from sessions_app.workspaces.wording import REVIEW_NO_CHANGES, REVIEW_NOT_YET
from tests.integration.web.conftest import session_cookie
from tests.integration.workspaces.conftest import git

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def worktree(bound_task) -> Path:
    path = worktree_ensure(task_id=bound_task.pk)
    assert path is not None
    return path


def _edit(worktree: Path) -> None:
    (worktree / "README.md").write_text("# The project\nnow with a second line\n")
    (worktree / "notes.md").unlink()
    (worktree / "src").mkdir()
    (worktree / "src" / "new.py").write_text("print('hello')\n")


def _workspace(task) -> TaskWorkspace:
    workspace = task_workspace(task_id=task.pk)
    assert workspace is not None
    return workspace


def test_a_task_before_its_first_turn_says_the_worktree_comes_then(bound_task):
    assert worktree_review(workspace=_workspace(bound_task)).notice == REVIEW_NOT_YET


def test_an_untouched_worktree_has_no_changes(bound_task, worktree):
    assert worktree_review(workspace=_workspace(bound_task)).notice == REVIEW_NO_CHANGES


def test_it_lists_new_changed_and_deleted_files_with_their_lines(bound_task, worktree):
    _edit(worktree)

    review = worktree_review(workspace=_workspace(bound_task))

    by_path = {file.path: (file.added, file.removed) for file in review.files}
    assert by_path == {"README.md": (1, 0), "notes.md": (0, 1), "src/new.py": (1, 0)}
    assert (review.added, review.removed, review.hidden) == (2, 1, 0)
    readme = next(file for file in review.files if file.path == "README.md")
    assert '<span class="gi">+now with a second line' in readme.html


def test_reading_the_review_leaves_the_worktrees_index_head_and_branch_alone(bound_task, worktree):
    _edit(worktree)
    index = Path(_workspace(bound_task).project.repo_path, ".git", "worktrees", worktree.name)
    before = (git(worktree, "rev-parse", "HEAD"), (index / "index").read_bytes())

    worktree_review(workspace=_workspace(bound_task))

    assert (git(worktree, "rev-parse", "HEAD"), (index / "index").read_bytes()) == before
    # The new file is still untracked and nothing is staged: the agent's git sees what it left.
    status = subprocess.run(
        ["git", "-C", str(worktree), "status", "--porcelain"], capture_output=True, text=True
    ).stdout.splitlines()
    assert status == [" M README.md", " D notes.md", "?? src/"]


def test_a_file_name_with_markup_is_shown_as_text(bound_task, worktree):
    (worktree / '"><img src=x onerror=alert(1)>.md').write_text("x\n")

    html = Client()
    html.force_login(bound_task.owner)
    page = html.get(f"/tasks/{bound_task.pk}/").content.decode()

    assert "<img src=x" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;.md" in page


def test_the_patch_download_applies_to_the_base(bound_task, worktree, tmp_path):
    _edit(worktree)
    client = Client()
    client.force_login(bound_task.owner)

    answer = client.get(f"/tasks/{bound_task.pk}/task.patch")

    assert answer.status_code == 200
    assert answer["Content-Type"].startswith("text/x-diff")
    assert answer["Content-Disposition"] == f'attachment; filename="task-{bound_task.pk}.patch"'
    copy = tmp_path / "copy"
    repo = _workspace(bound_task).project.repo_path
    subprocess.run(["git", "clone", "-q", repo, str(copy)], check=True)
    (tmp_path / "task.patch").write_bytes(answer.content)
    git(copy, "apply", str(tmp_path / "task.patch"))
    assert (copy / "src" / "new.py").read_text() == "print('hello')\n"
    assert not (copy / "notes.md").exists()


def test_another_persons_task_and_an_unbound_task_have_no_patch(
    bound_task, worktree, stranger, owner
):
    client = Client()
    client.force_login(stranger)
    assert client.get(f"/tasks/{bound_task.pk}/task.patch").status_code == 404
    client.force_login(owner)
    unbound = owner.tasks.create(title="Unbound")
    assert client.get(f"/tasks/{unbound.pk}/task.patch").status_code == 404


def test_an_archived_task_says_its_worktree_went_and_its_branch_stayed(bound_task, worktree):
    task_archive(task=bound_task)

    review = worktree_review(workspace=_workspace(bound_task))

    assert f"branch kandev/task-{bound_task.pk} is kept" in review.notice


@pytest.fixture
def socket_of(owner, stranger):
    """socket_of(user, path): an unconnected socket signed in as ``user`` (logins made here,
    outside the event loop)."""
    cookies = {user.username: session_cookie(user) for user in (owner, stranger)}

    def build(user, path: str) -> WebsocketCommunicator:
        headers = [
            (b"origin", b"http://127.0.0.1"),
            (b"host", b"127.0.0.1"),
            (b"cookie", f"sessionid={cookies[user.username]}".encode()),
        ]
        return WebsocketCommunicator(application, path, headers=headers)

    return build


async def test_the_review_socket_sends_the_changes_again_when_a_turn_ends(
    bound_task, worktree, owner, socket_of
):
    socket = socket_of(owner, f"/ws/board/?task={bound_task.pk}")
    connected, _ = await socket.connect()
    assert connected
    first = await socket.receive_from(timeout=10)
    assert 'id="review"' in first and 'hx-swap-oob="true"' in first
    assert escape(REVIEW_NO_CHANGES) in first

    (worktree / "added.txt").write_text("one\ntwo\n")
    # What every session event that changes the board sends after commit (a turn's end too).
    await get_channel_layer().group_send(
        board_group_name(bound_task.owner_id), {"type": "board.changed"}
    )
    second = await socket.receive_from(timeout=10)

    assert "added.txt" in second and "+2" in second
    await socket.disconnect()


async def test_the_review_socket_of_someone_elses_task_closes_like_an_unknown_one(
    bound_task, stranger, socket_of
):
    for path in (f"/ws/board/?task={bound_task.pk}", "/ws/board/?task=999999", "/ws/board/?task=x"):
        socket = socket_of(stranger, path)
        connected, _ = await socket.connect()
        assert connected  # accepted, then closed with the code a page reads as "not found"
        closed = await socket.receive_output(timeout=10)
        assert closed == {"type": "websocket.close", "code": 4404}
        await socket.disconnect()
