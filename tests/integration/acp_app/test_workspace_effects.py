"""Effects are evidence: the real mock agent, in the real sandbox, changes its workspace before
a retryable provider failure; the snapshot taken before the attempt tells, and the prompt is not
sent again automatically. Start fresh's restore puts the workspace back byte for byte."""

from __future__ import annotations

import pytest
from django.test import Client

from recovery.mock.acp_scenarios import WRITTEN_LINE
from sessions_app.effects.models import WorkspaceSnapshot
from sessions_app.effects.services import (
    fresh_restore_plan,
    workspace_restore,
    workspace_restore_plan,
)
from sessions_app.models import PromptGeneration
from sessions_app.services.prompts import session_recover
from tests.integration.acp_app.conftest import prompts_received, run_prompt

pytestmark = pytest.mark.django_db(transaction=True)

State = PromptGeneration.State


def _workspace(settings, chat):
    return settings.KANDEV_ACP_WORKDIR / f"session-{chat.pk}"


def test_it_does_not_retry_automatically_when_the_agent_changed_its_workspace(
    chat, owner, clock, agent_state, settings
):
    workspace = _workspace(settings, chat)
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "notes.md").write_bytes(b"the person's notes\x00\n")

    generation = run_prompt(chat, owner, "/write-then-fail:1 notes.md tidy up", clock)

    assert generation.state == State.FAILED
    assert "already changed files" in generation.error_message
    # The card names what changed, and says Resume keeps it.
    assert generation.error_message.startswith(
        "The agent changed 1 file before the provider failed: notes.md. Resume keeps these"
    )
    assert len(prompts_received(agent_state)) == 1  # never sent again
    assert (
        workspace / "notes.md"
    ).read_bytes() == b"the person's notes\x00\n" + WRITTEN_LINE.encode()
    snapshot = WorkspaceSnapshot.objects.get(generation=generation)
    plan = workspace_restore_plan(snapshot=snapshot, workspace=workspace)
    assert (plan.remove, plan.restore, plan.revert) == ((), (), ("notes.md",))


def test_it_retries_automatically_when_the_workspace_did_not_change(
    chat, owner, clock, agent_state, settings
):
    generation = run_prompt(chat, owner, "/overloaded:1 plan the sprint", clock)

    assert generation.state == State.WAITING_RETRY
    assert WorkspaceSnapshot.objects.get(generation=generation).tree_oid


def test_it_does_not_retry_automatically_when_the_workspace_is_too_large_to_snapshot(
    chat, owner, clock, agent_state, settings
):
    settings.KANDEV_SNAPSHOT_MAX_FILES = 1
    workspace = _workspace(settings, chat)
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "a.txt").write_text("a")
    (workspace / "b.txt").write_text("b")

    generation = run_prompt(chat, owner, "/overloaded:1 plan the sprint", clock)

    assert generation.state == State.FAILED
    assert "could not be checked" in generation.error_message
    assert WorkspaceSnapshot.objects.get(generation=generation).problem == "too_large"


def test_start_fresh_restore_puts_the_workspace_back_and_deletes_the_new_file(
    chat, owner, clock, agent_state, settings
):
    workspace = _workspace(settings, chat)
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "keep.txt").write_bytes(b"\x89PNG\r\n")

    generation = run_prompt(chat, owner, "/write-then-fail:1 new/draft.md draft it", clock)
    assert (workspace / "new" / "draft.md").exists()
    snapshot = WorkspaceSnapshot.objects.get(generation=generation)

    workspace_restore(snapshot=snapshot, workspace=workspace)

    assert sorted(p.name for p in workspace.iterdir()) == ["keep.txt"]
    assert (workspace / "keep.txt").read_bytes() == b"\x89PNG\r\n"


@pytest.mark.parametrize("restore", [True, False])
def test_start_fresh_restores_the_workspace_only_when_confirmed(
    chat, owner, clock, agent_state, settings, restore
):
    workspace = _workspace(settings, chat)
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "notes.md").write_bytes(b"original\n")
    run_prompt(chat, owner, "/write-then-fail:1 added.md go", clock)
    assert (workspace / "added.md").exists()
    # The confirmation step lists what the restore would undo.
    plan = fresh_restore_plan(session_id=chat.pk)
    assert (plan.remove, plan.restore, plan.revert) == (("added.md",), (), ())

    session_recover(session=chat, user=owner, action="fresh", restore=restore)

    assert (workspace / "added.md").exists() is not restore
    assert (workspace / "notes.md").read_bytes() == b"original\n"


def test_the_recovery_cards_start_fresh_restores_only_with_restore_confirmed(
    chat, owner, clock, agent_state, settings
):
    workspace = _workspace(settings, chat)
    run_prompt(chat, owner, "/write-then-fail:1 added.md go", clock)
    client = Client()
    client.force_login(owner)

    response = client.post(f"/sessions/{chat.pk}/recover/", {"action": "fresh", "restore": "1"})

    assert response.status_code in {200, 302}
    assert not (workspace / "added.md").exists()
