"""Start fresh and put the workspace back, file by file: the card's two ways, the confirmation's
three groups, the restore itself, a stranger's 404, and the API's ``restore`` (409 without a
plan, 422 for a non-bool). The turn is opened, snapshotted and failed through the real services
(no agent process: the agent's effects are written by the test between snapshot and failure)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from sessions_app.api_auth import api_token_create
from sessions_app.effects.models import WorkspaceSnapshot
from sessions_app.effects.services import workspace_snapshot_record
from sessions_app.models import PromptGeneration, Session, SessionEvent
from sessions_app.services import prompt_submit
from sessions_app.services.lifecycle.generation import generation_claim, generation_end

pytestmark = pytest.mark.django_db

State = PromptGeneration.State


@pytest.fixture
def workspace(settings, chat) -> Path:
    path = Path(settings.KANDEV_ACP_WORKDIR) / f"session-{chat.pk}"
    path.mkdir(parents=True)
    (path / "notes.md").write_bytes(b"the person's notes\n")
    (path / "old.txt").write_bytes(b"kept for years\x00\n")
    (path / "src").mkdir()
    (path / "src" / "app.py").write_text("print('hello')\n")
    return path


def failed_turn(chat, owner, workspace: Path, effects: Callable[[Path], None]) -> PromptGeneration:
    """A turn whose first attempt was snapshotted, then did ``effects``, then failed."""
    generation = prompt_submit(session=chat, user=owner, text="tidy up the notes")
    claimed = generation_claim(generation_id=generation.pk)
    assert claimed is not None
    workspace_snapshot_record(
        generation=claimed, attempt=1, workspace=workspace, now=timezone.now()
    )
    effects(workspace)
    generation_end(
        generation=claimed,
        state=State.FAILED,
        error_code="overloaded",
        error_message="The provider is overloaded.",
    )
    return claimed


def three_effects(workspace: Path) -> None:
    (workspace / "notes.md").write_bytes(b"the agent's notes\n")  # changed
    (workspace / "drafts").mkdir()
    (workspace / "drafts" / "plan.md").write_text("a plan\n")  # new, in a new folder
    (workspace / "old.txt").unlink()  # deleted


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def htmx(client: Client) -> dict[str, str]:
    return {"HTTP_HX_REQUEST": "true"}


def test_restore_puts_back_a_changed_file(chat, owner, workspace):
    failed_turn(chat, owner, workspace, lambda w: (w / "notes.md").write_bytes(b"rewritten\n"))

    client_for(owner).post(f"/sessions/{chat.pk}/recover/", {"action": "fresh", "restore": "1"})

    assert (workspace / "notes.md").read_bytes() == b"the person's notes\n"


def test_restore_removes_a_new_file_and_the_folder_made_for_it(chat, owner, workspace):
    def add(w: Path) -> None:
        (w / "drafts").mkdir()
        (w / "drafts" / "plan.md").write_text("a plan\n")

    failed_turn(chat, owner, workspace, add)

    client_for(owner).post(f"/sessions/{chat.pk}/recover/", {"action": "fresh", "restore": "1"})

    assert not (workspace / "drafts").exists()
    assert sorted(p.name for p in workspace.iterdir()) == ["notes.md", "old.txt", "src"]


def test_restore_brings_back_a_deleted_file(chat, owner, workspace):
    failed_turn(chat, owner, workspace, lambda w: shutil.rmtree(w / "src"))

    client_for(owner).post(f"/sessions/{chat.pk}/recover/", {"action": "fresh", "restore": "1"})

    assert (workspace / "src" / "app.py").read_text() == "print('hello')\n"


def test_restore_leaves_files_outside_the_snapshots_scope_alone(chat, owner, workspace):
    beside = workspace.parent / "beside.txt"
    beside.write_text("not the agent's\n")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "HEAD").write_text("ref: refs/heads/main\n")

    def effects(w: Path) -> None:
        (w / "notes.md").write_text("changed\n")
        beside.write_text("changed meanwhile, elsewhere\n")
        (w / ".git" / "HEAD").write_text("ref: refs/heads/other\n")

    failed_turn(chat, owner, workspace, effects)

    client_for(owner).post(f"/sessions/{chat.pk}/recover/", {"action": "fresh", "restore": "1"})

    assert (workspace / "notes.md").read_bytes() == b"the person's notes\n"
    assert beside.read_text() == "changed meanwhile, elsewhere\n"
    assert (workspace / ".git" / "HEAD").read_text() == "ref: refs/heads/other\n"


def test_keep_the_files_starts_fresh_without_touching_them(chat, owner, workspace):
    failed_turn(chat, owner, workspace, three_effects)

    client_for(owner).post(f"/sessions/{chat.pk}/recover/", {"action": "fresh"})

    assert (workspace / "notes.md").read_bytes() == b"the agent's notes\n"
    assert (workspace / "drafts" / "plan.md").exists()
    assert not (workspace / "old.txt").exists()


def test_the_card_offers_both_ways_and_counts_the_files(chat, owner, workspace):
    failed_turn(chat, owner, workspace, three_effects)

    page = client_for(owner).get(f"/sessions/{chat.pk}/").content.decode()

    assert "Start fresh, keep the files" in page
    assert "Start fresh and put the workspace back" in page
    assert f'href="/sessions/{chat.pk}/recover/fresh/"' in page
    assert "This turn changed 3 files." in page


def test_the_card_counts_one_file_as_one_file(chat, owner, workspace):
    failed_turn(chat, owner, workspace, lambda w: (w / "notes.md").write_text("x\n"))

    page = client_for(owner).get(f"/sessions/{chat.pk}/").content.decode()

    assert "This turn changed 1 file." in page


def test_every_viewer_is_told_the_offer_on_the_session_updated_event(chat, owner, workspace):
    failed_turn(chat, owner, workspace, three_effects)

    event = SessionEvent.objects.filter(session=chat, type="session.updated").latest("seq")

    assert event.payload["state"] == Session.State.NEEDS_ATTENTION
    assert event.payload["fresh_restore"] == {"files": 3}


def test_the_card_offers_no_restore_when_the_turn_changed_nothing(chat, owner, workspace):
    failed_turn(chat, owner, workspace, lambda w: None)

    page = client_for(owner).get(f"/sessions/{chat.pk}/").content.decode()

    assert ">Start fresh</button>" in page
    assert "put the workspace back" not in page


def test_the_card_says_why_when_the_turns_start_was_too_large_to_record(
    chat, owner, workspace, settings
):
    settings.KANDEV_SNAPSHOT_MAX_FILES = 1
    failed_turn(chat, owner, workspace, three_effects)
    assert WorkspaceSnapshot.objects.get(session=chat).problem == "too_large"

    page = client_for(owner).get(f"/sessions/{chat.pk}/").content.decode()

    assert "Start fresh and put the workspace back" not in page
    assert (
        "Start fresh cannot put the workspace back: it was too large to record when the turn "
        "started. Your files are kept as they are."
    ) in page


def test_the_confirmation_lists_what_will_be_removed_restored_and_brought_back(
    chat, owner, workspace
):
    def effects(w: Path) -> None:
        three_effects(w)
        (w / "src" / "extra.py").write_text("x = 1\n")

    failed_turn(chat, owner, workspace, effects)
    client = client_for(owner)

    swapped = client.get(f"/sessions/{chat.pk}/recover/fresh/", **htmx(client)).content.decode()
    plain = client.get(f"/sessions/{chat.pk}/recover/fresh/").content.decode()

    for body in (swapped, plain):
        assert "Putting the workspace back changes 4 files" in body
        assert "Removed: 2 files new since the turn started" in body
        assert "Restored: 1 file changed since the turn started" in body
        assert "Brought back: 1 file deleted since the turn started" in body
        removed = body.index("Removed:")
        restored = body.index("Restored:")
        brought = body.index("Brought back:")
        assert removed < body.index("<code>drafts/plan.md</code>") < restored
        assert removed < body.index("<code>src/extra.py</code>") < restored
        assert restored < body.index("<code>notes.md</code>") < brought
        assert brought < body.index("<code>old.txt</code>")
        assert 'name="restore" value="1"' in body
        assert "Confirm: put it back and start fresh" in body
    assert "<html" not in swapped and "<html" in plain
    # Looking at the plan changes nothing.
    assert (workspace / "drafts" / "plan.md").exists()


def test_a_stranger_can_neither_see_the_plan_nor_restore(chat, owner, stranger, workspace):
    failed_turn(chat, owner, workspace, three_effects)
    client = client_for(stranger)
    unknown = client.get("/sessions/999999/recover/fresh/")

    plan = client.get(f"/sessions/{chat.pk}/recover/fresh/")
    restore = client.post(f"/sessions/{chat.pk}/recover/", {"action": "fresh", "restore": "1"})

    assert plan.status_code == restore.status_code == 404
    assert plan.content == unknown.content
    assert (workspace / "drafts" / "plan.md").exists()
    assert PromptGeneration.objects.filter(session=chat).count() == 1


def test_confirm_starts_fresh_and_every_viewers_card_goes_away(chat, owner, workspace):
    failed_turn(chat, owner, workspace, three_effects)

    response = client_for(owner).post(
        f"/sessions/{chat.pk}/recover/", {"action": "fresh", "restore": "1"}
    )

    assert response.status_code == 302
    event = SessionEvent.objects.filter(session=chat, type="session.updated").latest("seq")
    assert event.payload["state"] == Session.State.QUEUED
    assert "fresh_restore" not in event.payload
    assert PromptGeneration.objects.filter(session=chat).latest("number").mode == "fresh"


def api(user) -> Client:
    return Client(headers={"authorization": f"Bearer {api_token_create(user=user)}"})


def api_recover(client: Client, session_id: int, body: object):
    return client.post(
        f"/api/v1/sessions/{session_id}/recover",
        data=json.dumps(body),
        content_type="application/json",
    )


def test_the_api_puts_the_workspace_back_when_asked(chat, owner, workspace):
    failed_turn(chat, owner, workspace, three_effects)

    response = api_recover(api(owner), chat.pk, {"action": "fresh", "restore": True})

    assert response.status_code == 202
    assert (workspace / "notes.md").read_bytes() == b"the person's notes\n"
    assert (workspace / "old.txt").read_bytes() == b"kept for years\x00\n"
    assert not (workspace / "drafts").exists()


def test_the_api_answers_409_when_the_turn_has_no_plan(chat, owner, workspace, settings):
    settings.KANDEV_SNAPSHOT_MAX_FILES = 1  # the turn's start could not be recorded
    failed_turn(chat, owner, workspace, three_effects)

    response = api_recover(api(owner), chat.pk, {"action": "fresh", "restore": True})

    assert response.status_code == 409
    assert "cannot be put back" in response.json()["detail"]
    assert PromptGeneration.objects.filter(session=chat).count() == 1  # nothing started
    assert (workspace / "drafts" / "plan.md").exists()


@pytest.mark.parametrize("restore", ["yes", 1, "true", None, []])
def test_the_api_refuses_a_restore_that_is_not_a_bool(chat, owner, workspace, restore):
    failed_turn(chat, owner, workspace, three_effects)

    response = api_recover(api(owner), chat.pk, {"action": "fresh", "restore": restore})

    assert response.status_code == 422
    assert PromptGeneration.objects.filter(session=chat).count() == 1


def test_the_api_refuses_restore_with_resume_as_a_conflict(chat, owner, workspace):
    failed_turn(chat, owner, workspace, three_effects)

    response = api_recover(api(owner), chat.pk, {"action": "resume", "restore": True})

    # The schema allows the pair (it cannot tie one field to another), so not a 422.
    assert response.status_code == 409
    assert response.json()["detail"] == "Only Start fresh can put the workspace back."
    assert (workspace / "drafts" / "plan.md").exists()


def test_the_api_answers_a_strangers_restore_like_an_unknown_session(
    chat, owner, stranger, workspace
):
    failed_turn(chat, owner, workspace, three_effects)

    foreign = api_recover(api(stranger), chat.pk, {"action": "fresh", "restore": True})
    unknown = api_recover(api(stranger), 999999, {"action": "fresh", "restore": True})

    assert foreign.status_code == unknown.status_code == 404
    assert foreign.content == unknown.content
    assert (workspace / "drafts" / "plan.md").exists()


def test_the_openapi_document_describes_restore(client):
    schema = client.get("/api/openapi.json").json()

    restore = schema["components"]["schemas"]["RecoverIn"]["properties"]["restore"]
    assert restore["type"] == "boolean" and restore["default"] is False
    assert "409" in restore["description"]
    responses = schema["paths"]["/api/v1/sessions/{session_id}/recover"]["post"]["responses"]
    assert {"202", "409", "422", "404"} <= set(responses)
