"""The read-only policy passes a read or a search without asking only when every path it names
resolves, symlinks followed, inside the agent's working directory (as the agent sees it, mapped to
where it is on this machine)."""

from __future__ import annotations

import pytest

from recovery.providers.acp.permissions import (
    PermissionPolicy,
    ToolRequest,
    Workspace,
    permission_choose,
    request_paths,
)

OPTIONS = [("a1", "allow_once"), ("r1", "reject_once")]


@pytest.fixture
def workspace(tmp_path):
    host = tmp_path / "session-1"
    (host / "src").mkdir(parents=True)
    (host / "src" / "app.py").write_text("print('hi')\n")
    (tmp_path / "session-2").mkdir()
    (tmp_path / "session-2" / "secret.txt").write_text("theirs\n")
    (host / "theirs").symlink_to(tmp_path / "session-2" / "secret.txt")
    (host / "passwd").symlink_to("/etc/passwd")
    (host / "up").symlink_to("..")
    (host / "inside").symlink_to("src/app.py")
    return Workspace(seen="/workspace", host=str(host))


def granted(workspace, kind: str, *paths: str) -> bool:
    choice = permission_choose(
        policy=PermissionPolicy.ALLOW_READ_ONLY,
        request=ToolRequest(kind=kind, paths=paths),
        workspace=workspace,
        options=OPTIONS,
    )
    return choice.granted


@pytest.mark.parametrize(
    "path", ["/workspace/src/app.py", "src/app.py", "/workspace", "/workspace/inside", "new.txt"]
)
def test_a_read_inside_the_working_directory_passes(workspace, path):
    assert granted(workspace, "read", path)


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "/workspace/../session-2/secret.txt",
        "../session-2/secret.txt",
        "/workspace/src/../../etc/passwd",
        "/workspace/theirs",  # a symlink planted inside, pointing at another session
        "/workspace/passwd",  # ... at the system
        "/workspace/up/session-2/secret.txt",  # a link to the parent folder
        "/proc/1/environ",
        "/workspace/src/app.py\x00.txt",
        "",
    ],
)
def test_a_read_that_leaves_the_working_directory_is_refused(workspace, path):
    assert not granted(workspace, "read", path)
    assert not granted(workspace, "search", path)


def test_one_path_outside_refuses_the_whole_call(workspace):
    assert not granted(workspace, "read", "/workspace/src/app.py", "/etc/passwd")


def test_a_read_that_names_no_path_is_refused_and_a_thought_needs_none(workspace):
    assert not granted(workspace, "read")
    assert granted(workspace, "think")


def test_edits_and_commands_are_refused_wherever_they_point(workspace):
    assert not granted(workspace, "edit", "/workspace/src/app.py")
    assert not granted(workspace, "execute", "/workspace")


def test_the_paths_of_a_request_come_from_its_locations_and_its_input_fields():
    paths = request_paths(
        locations=["/workspace/a.txt"],
        raw_input={
            "file_path": "/etc/passwd",
            "dir_path": "/root",
            "paths": ["/x", 3],
            "pattern": "/etc/**/*.conf",
            "command": "cat /etc/shadow",  # not a path field: commands are never read-only
        },
    )

    assert paths == ("/workspace/a.txt", "/etc/passwd", "/root", "/x", "/etc")


def test_a_relative_glob_pattern_is_not_a_path_but_an_absolute_one_is_checked(workspace):
    assert request_paths(locations=[], raw_input={"pattern": "**/*.py"}) == ()
    outside = request_paths(locations=[], raw_input={"pattern": "/etc/*"})
    assert not granted(workspace, "search", *outside)


def test_the_current_text_of_a_file_is_read_only_inside_the_workspace(tmp_path):
    inside = tmp_path / "work"
    inside.mkdir()
    (inside / "notes.md").write_text("mine\n")
    (tmp_path / "secret").write_text("not yours\n")
    (inside / "link").symlink_to(tmp_path / "secret")
    (inside / "big").write_text("x" * 100)
    workspace = Workspace(seen="/workspace", host=str(inside))

    assert workspace.current_text("/workspace/notes.md", limit=50) == "mine\n"
    assert workspace.current_text("notes.md", limit=50) == "mine\n"
    assert workspace.current_text("/workspace/link", limit=50) is None
    assert workspace.current_text("/workspace/../secret", limit=50) is None
    assert workspace.current_text("/workspace/big", limit=50) is None
    assert workspace.current_text("/workspace/absent", limit=50) is None
