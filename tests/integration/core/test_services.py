"""Services and selectors against real Postgres and Redis."""

from __future__ import annotations

import json

import pytest

from sessions_app import event_types as ev
from sessions_app.errors import GenerationActive, InvalidInput, SessionNotFound
from sessions_app.models import Message, PromptGeneration, Session, SessionEvent, Task
from sessions_app.selectors import (
    events_after,
    session_for_user,
    session_snapshot,
    sessions_for_user,
    tasks_for_user,
)
from sessions_app.services import (
    generation_claim,
    generation_end,
    message_retract,
    prompt_submit,
    session_create,
    session_stop,
    target_create,
    task_create,
)

pytestmark = pytest.mark.django_db


def event_types(session) -> list[str]:
    return list(SessionEvent.objects.filter(session=session).values_list("type", flat=True))


def test_it_creates_a_task_from_the_title_when_none_is_given(owner, target):
    session = session_create(owner=owner, target=target, title="  Write the report ")
    assert session.task.title == "Write the report"
    assert session.task.owner == owner
    assert session.state == Session.State.IDLE


def test_it_refuses_a_task_belonging_to_someone_else(owner, stranger, target):
    bobs_task = task_create(owner=stranger, title="Bob's")
    with pytest.raises(InvalidInput) as error:
        session_create(owner=owner, target=target, title="x", task=bobs_task)
    assert error.value.field == "task"


def test_prompt_submit_writes_the_message_and_generation_and_enqueues_the_run(
    session, owner, celery_queue, redis_client, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        generation = prompt_submit(session=session, user=owner, text="  Hello there  ")

    assert generation.number == 1 and generation.state == PromptGeneration.State.QUEUED
    message = Message.objects.get(session=session)
    assert (message.role, message.text, message.generation) == ("user", "Hello there", generation)
    session.refresh_from_db()
    assert session.state == Session.State.QUEUED
    assert session.task.status == Task.Status.IN_PROGRESS
    assert event_types(session) == [ev.MESSAGE_CREATED, ev.GENERATION_UPDATED, ev.SESSION_UPDATED]
    queued = [json.loads(raw) for raw in redis_client.lrange(celery_queue, 0, -1)]
    assert [q["headers"]["task"] for q in queued] == ["sessions_app.run_generation"]
    assert queued[0]["headers"]["argsrepr"] == f"({generation.pk},)"


def test_it_refuses_a_second_prompt_while_one_is_active(session, owner):
    prompt_submit(session=session, user=owner, text="first")
    with pytest.raises(GenerationActive):
        prompt_submit(session=session, user=owner, text="second")
    assert Message.objects.filter(session=session).count() == 1


def test_generation_numbers_count_up_per_session(session, owner, target):
    other = session_create(owner=owner, target=target, title="Other")
    first = prompt_submit(session=session, user=owner, text="one")
    generation_claim(generation_id=first.pk)
    generation_end(generation=first, state=PromptGeneration.State.SUCCEEDED)
    second = prompt_submit(session=session, user=owner, text="two")
    elsewhere = prompt_submit(session=other, user=owner, text="one")
    assert (first.number, second.number, elsewhere.number) == (1, 2, 1)


@pytest.mark.parametrize("text", ["", "   \n ", "x" * 32_001])
def test_it_refuses_empty_and_oversized_prompts(session, owner, text, settings):
    settings.KANDEV_MAX_PROMPT_CHARS = 32_000
    with pytest.raises(InvalidInput) as error:
        prompt_submit(session=session, user=owner, text=text)
    assert error.value.field == "text"
    assert not PromptGeneration.objects.exists()


def test_a_credential_pasted_into_a_prompt_is_never_stored(session, owner):
    prompt_submit(
        session=session,
        user=owner,
        text="why does sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123 fail?",
    )

    stored = Message.objects.get(session=session, role="user").text
    assert "abcdefghijklmnop" not in stored
    assert stored.startswith("why does ") and stored.endswith(" fail?")
    logged = json.dumps(list(SessionEvent.objects.filter(session=session).values("payload")))
    assert "abcdefghijklmnop" not in logged


def test_a_stranger_cannot_prompt_a_session(session, stranger):
    with pytest.raises(SessionNotFound):
        prompt_submit(session=session, user=stranger, text="hi")


def test_only_one_of_two_claims_wins(session, owner):
    generation = prompt_submit(session=session, user=owner, text="go")
    first = generation_claim(generation_id=generation.pk)
    second = generation_claim(generation_id=generation.pk)
    assert first is not None and first.state == PromptGeneration.State.RUNNING
    assert second is None
    assert generation_claim(generation_id=999_999) is None


def test_stop_ends_a_queued_generation_directly(session, owner):
    generation = prompt_submit(session=session, user=owner, text="go")
    stopped = session_stop(session=session, user=owner)
    assert stopped.pk == generation.pk
    generation.refresh_from_db()
    session.refresh_from_db()
    assert generation.state == PromptGeneration.State.STOPPED and generation.finished_at
    assert session.state == Session.State.IDLE
    # A worker that receives the already-stopped generation later must not run it.
    assert generation_claim(generation_id=generation.pk) is None


def test_stop_flags_a_running_generation_for_its_worker(session, owner):
    generation = prompt_submit(session=session, user=owner, text="go")
    generation_claim(generation_id=generation.pk)
    session_stop(session=session, user=owner)
    generation.refresh_from_db()
    assert generation.state == PromptGeneration.State.RUNNING
    assert generation.stop_requested is True


def test_pressing_stop_with_nothing_running_is_harmless(session, owner):
    assert session_stop(session=session, user=owner) is None


def test_a_failed_generation_leaves_the_session_and_task_needing_attention(session, owner):
    generation = prompt_submit(session=session, user=owner, text="go")
    generation_claim(generation_id=generation.pk)
    assert generation_end(
        generation=generation,
        state=PromptGeneration.State.FAILED,
        error_code="provider_overloaded",
        error_message="Provider overloaded.",
    )
    session.refresh_from_db()
    assert session.state == Session.State.NEEDS_ATTENTION
    assert session.task.status == Task.Status.NEEDS_ATTENTION
    # Ending twice (a stop racing the failure) changes nothing.
    assert not generation_end(generation=generation, state=PromptGeneration.State.STOPPED)


def test_a_finished_turn_hands_the_task_back_as_open(session, owner):
    generation = prompt_submit(session=session, user=owner, text="go")
    generation_claim(generation_id=generation.pk)

    assert generation_end(generation=generation, state=PromptGeneration.State.SUCCEEDED)

    session.refresh_from_db()
    assert (session.state, session.task.status) == (Session.State.IDLE, Task.Status.OPEN)


def test_unknown_and_foreign_sessions_are_indistinguishable(session, owner, stranger):
    with pytest.raises(SessionNotFound):
        session_for_user(user=stranger, session_id=session.pk)
    with pytest.raises(SessionNotFound):
        session_for_user(user=stranger, session_id=session.pk + 10_000)
    assert session_for_user(user=owner, session_id=session.pk) == session


def test_a_member_may_view_a_session(session, stranger):
    session.members.add(stranger)
    assert session_for_user(user=stranger, session_id=session.pk) == session
    assert list(sessions_for_user(user=stranger)) == [session]


def test_the_board_lists_only_the_users_tasks(session, owner, stranger):
    task_create(owner=stranger, title="Bob's own")
    board = list(tasks_for_user(user=owner))
    assert [t.title for t in board] == ["Plan the week"]
    assert [s.pk for s in board[0].sessions.all()] == [session.pk]


def test_retracting_messages_deletes_them_and_logs_the_deletion_once(session, owner):
    prompt_submit(session=session, user=owner, text="to be retracted")
    ids = list(Message.objects.filter(session=session).values_list("pk", flat=True))
    assert message_retract(session=session, ids=ids) == ids
    assert message_retract(session=session, ids=ids) == []
    deletions = SessionEvent.objects.filter(session=session, type=ev.MESSAGE_DELETED)
    assert [e.payload for e in deletions] == [{"ids": ids}]
    assert session_snapshot(session=session)["messages"] == []


def test_events_after_returns_the_log_in_order_from_a_seq(session, owner):
    prompt_submit(session=session, user=owner, text="hi")
    events = events_after(session=session, after_seq=1, limit=10)
    assert [e["seq"] for e in events] == [2, 3]
    assert [e["event"] for e in events] == [ev.GENERATION_UPDATED, ev.SESSION_UPDATED]
    assert events_after(session=session, after_seq=0, limit=2)[-1]["seq"] == 2


def test_target_create_stores_ordered_fallbacks(db):
    backup = target_create(
        name="Backup", kind="openai", model="gpt-x", api_key_env="OPENAI_API_KEY"
    )
    spare = target_create(name="Spare", kind="mock")
    main = target_create(
        name="Main",
        kind="anthropic",
        model="claude-x",
        api_key_env="ANTHROPIC_API_KEY",
        fallbacks=[spare.pk, backup.pk],
    )
    assert [link.fallback_id for link in main.fallback_links.all()] == [spare.pk, backup.pk]


@pytest.mark.parametrize(
    ("fields", "bad_field"),
    [
        (
            {"name": "A", "kind": "anthropic", "model": "m", "api_key_env": "sk-ant-test-000"},
            "api_key_env",
        ),
        ({"name": "A", "kind": "anthropic", "model": "m", "fallbacks": [987654]}, "fallbacks"),
        ({"name": "A", "kind": "openai"}, "model"),
        ({"name": "A", "kind": "acp"}, "agent_kind"),
        ({"name": "A", "kind": "acp", "agent_kind": "sh -c id"}, "agent_kind"),
        ({"name": "A", "kind": "mock", "agent_kind": "claude"}, "agent_kind"),
        ({"name": " ", "kind": "mock"}, "name"),
        ({"name": "A", "kind": "carrier-pigeon"}, "kind"),
    ],
)
def test_target_create_refuses_bad_fields(db, fields, bad_field):
    with pytest.raises(InvalidInput) as error:
        target_create(**fields)
    assert error.value.field == bad_field


def test_a_generation_whose_task_was_lost_is_enqueued_again(
    session, owner, celery_queue, redis_client
):
    from datetime import timedelta

    from django.utils import timezone

    from sessions_app.services import generations_requeue_stale

    lost = prompt_submit(session=session, user=owner, text="go")  # on_commit never ran here
    assert generations_requeue_stale(older_than_s=30) == []
    PromptGeneration.objects.filter(pk=lost.pk).update(
        created_at=timezone.now() - timedelta(minutes=5)
    )
    assert generations_requeue_stale(older_than_s=30) == [lost.pk]
    queued = [json.loads(raw) for raw in redis_client.lrange(celery_queue, 0, -1)]
    assert [q["headers"]["argsrepr"] for q in queued] == [f"({lost.pk},)"]
