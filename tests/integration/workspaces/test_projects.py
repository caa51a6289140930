"""Registering a project: only a real repository inside a project root, with a base that is a
ref or commit of it; every field that reaches git or the disk is checked (point 7)."""

from __future__ import annotations

import os

import pytest
from django.core.management import call_command

from sessions_app.errors import InvalidInput
from sessions_app.workspaces.models import Project
from sessions_app.workspaces.services import project_register
from tests.integration.workspaces.conftest import git, make_repository

pytestmark = pytest.mark.django_db


def refused(field: str, **kwargs) -> str:
    with pytest.raises(InvalidInput) as caught:
        project_register(name=kwargs.pop("name", "p"), **kwargs)
    assert caught.value.field == field
    assert not Project.objects.exists()
    return caught.value.message


def test_it_registers_a_repository_with_its_default_branch_as_base(repo, owner):
    project = project_register(name="app", repo_path=str(repo), users=[owner])

    assert project.repo_path == str(repo)
    assert project.base_ref == "refs/heads/main"
    assert list(project.allowed_users.all()) == [owner]


def test_it_follows_the_default_branch_whatever_it_is_named(roots):
    repo = make_repository(roots / "trunk-first")
    git(repo, "branch", "-m", "main", "trunk")

    assert project_register(name="t", repo_path=str(repo)).base_ref == "refs/heads/trunk"


def test_it_takes_a_named_branch_tag_or_commit_as_base(repo):
    git(repo, "tag", "v1")
    sha = git(repo, "rev-parse", "HEAD")

    assert (
        project_register(name="a", repo_path=str(repo), base="main").base_ref == "refs/heads/main"
    )
    assert project_register(name="b", repo_path=str(repo), base="v1").base_ref == "refs/tags/v1"
    assert project_register(name="c", repo_path=str(repo), base=sha).base_ref == sha


def test_it_refuses_every_project_when_no_root_is_configured(repo, settings):
    settings.KANDEV_PROJECT_ROOTS = ()

    assert "KANDEV_PROJECT_ROOTS" in refused("repo_path", repo_path=str(repo))


def test_it_refuses_a_path_with_dot_dot_even_when_it_lands_inside_a_root(repo, roots):
    assert refused("repo_path", repo_path=f"{roots}/app/../app")


def test_it_refuses_an_absolute_path_outside_the_roots(tmp_path, roots):
    outside = make_repository(tmp_path / "elsewhere")

    assert "project roots" in refused("repo_path", repo_path=str(outside))


def test_it_refuses_a_symlink_inside_a_root_that_points_out(tmp_path, roots):
    outside = make_repository(tmp_path / "elsewhere")
    os.symlink(outside, roots / "innocent")

    assert "project roots" in refused("repo_path", repo_path=str(roots / "innocent"))


def test_it_refuses_a_repository_whose_git_folder_is_a_symlink_out(tmp_path, roots):
    outside = make_repository(tmp_path / "elsewhere")
    checkout = roots / "decoy"
    checkout.mkdir()
    os.symlink(outside / ".git", checkout / ".git")

    assert refused("repo_path", repo_path=str(checkout))


def test_it_refuses_nul_bytes_relative_paths_and_plain_folders(repo, roots):
    (roots / "plain").mkdir()

    assert "NUL" in refused("repo_path", repo_path=f"{repo}\x00/etc")
    assert "absolute" in refused("repo_path", repo_path="projects/app")
    assert refused("repo_path", repo_path=str(roots / "plain"))
    assert refused("repo_path", repo_path=str(roots / "missing"))


@pytest.mark.parametrize(
    "base",
    [
        "--upload-pack=touch /tmp/pwned",
        "--output=/tmp/pwned",
        "../../x",
        "refs/heads/../../x",
        "main\x00--help",
        "main other",
        "refs/heads/nope",
        "HEAD@{1}",
        "",
    ],
)
def test_it_refuses_a_base_that_is_no_ref_of_the_repository(repo, base, tmp_path):
    assert refused("base_ref", repo_path=str(repo), base=base)
    assert not (tmp_path / "pwned").exists()


def test_project_add_registers_from_the_command_line(repo, owner):
    call_command("project_add", "app", str(repo), "--base", "main", "--user", owner.username)

    project = Project.objects.get(name="app")
    assert project.base_ref == "refs/heads/main"
    assert list(project.allowed_users.all()) == [owner]
