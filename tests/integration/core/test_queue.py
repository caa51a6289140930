"""Queued is not running: a prompt waits in line, its viewers are told their place, and one
person's prompts never stand in front of another person's (KANDEV_USER_MAX_RUNNING)."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from sessions_app import event_types as ev
from sessions_app.models import PromptGeneration, Session, SessionEvent
from sessions_app.selectors import session_snapshot, sessions_queue
from sessions_app.services import generation_claim, generation_end, prompt_submit, session_stop
from sessions_app.services.lifecycle.queued import queue_positions_announce
from tests.support.factories import SessionFactory, UserFactory

pytestmark = pytest.mark.django_db

Reason = PromptGeneration.QueueReason


def prompt(user, *, target, text: str = "hello") -> PromptGeneration:
    session = SessionFactory(owner=user, target=target)
    return prompt_submit(session=session, user=user, text=text)


def last_queue_event(session: Session) -> dict:
    event = SessionEvent.objects.filter(session=session, type=ev.SESSION_UPDATED).last()
    return event.payload


def run_tasks_on_broker(redis_client, queue: str) -> list[int]:
    return [
        json.loads(json.loads(raw)["headers"]["argsrepr"].replace("(", "[").replace(",)", "]"))[0]
        for raw in redis_client.lrange(queue, 0, -1)
    ]


def test_a_submitted_prompt_is_queued_with_its_place_until_a_worker_claims_it(target):
    first, _second, third = (prompt(UserFactory(), target=target) for _ in range(3))

    assert third.session.state == Session.State.QUEUED
    assert last_queue_event(third.session)["queue"] == {"ahead": 2, "reason": "", "generation": 1}
    assert session_snapshot(session=third.session)["queue"]["ahead"] == 2

    claimed = generation_claim(generation_id=first.pk)
    assert claimed is not None and claimed.state == PromptGeneration.State.RUNNING
    first.session.refresh_from_db()
    assert first.session.state == Session.State.RUNNING
    assert session_snapshot(session=first.session)["queue"] is None


def test_the_line_moving_is_announced_to_the_sessions_behind(target):
    first, second = (prompt(UserFactory(), target=target) for _ in range(2))
    generation_claim(generation_id=first.pk)

    assert queue_positions_announce() == 1
    assert last_queue_event(second.session)["queue"]["ahead"] == 0
    # Nothing moved since: nothing is announced twice.
    assert queue_positions_announce() == 0


def test_the_session_page_and_the_board_show_the_place_in_line(target, owner):
    prompt(UserFactory(), target=target)
    prompt(UserFactory(), target=target)
    mine = prompt(owner, target=target)
    client = Client()
    client.force_login(owner)

    page = client.get(f"/sessions/{mine.session.pk}/").content.decode()
    board = client.get("/").content.decode()

    assert 'data-ahead="2"' in page and "2 ahead" in page
    assert "Queued · " in board and "2 ahead" in board
    assert sessions_queue(session_ids=[mine.session.pk])[mine.session.pk]["ahead"] == 2


def test_one_persons_prompts_beyond_the_limit_wait_without_delaying_anyone_else(
    target, settings, redis_client, celery_queue, django_capture_on_commit_callbacks
):
    settings.KANDEV_USER_MAX_RUNNING = 2
    busy, other = UserFactory(), UserFactory()
    running = [prompt(busy, target=target) for _ in range(2)]
    held = prompt(busy, target=target)
    theirs = prompt(other, target=target)

    assert all(generation_claim(generation_id=g.pk) for g in running)
    assert generation_claim(generation_id=held.pk) is None
    held.refresh_from_db()
    assert (held.state, held.queue_reason) == ("queued", Reason.USER_LIMIT)
    assert last_queue_event(held.session)["queue"] == {
        "ahead": 0, "reason": "user_limit", "generation": 1,
    }  # fmt: skip
    # The other person's prompt is not behind the held one.
    assert generation_claim(generation_id=theirs.pk) is not None

    redis_client.delete(celery_queue)
    with django_capture_on_commit_callbacks(execute=True):
        generation_end(generation=running[0], state=PromptGeneration.State.SUCCEEDED)

    held.refresh_from_db()
    assert held.queue_reason == Reason.WORKER
    assert run_tasks_on_broker(redis_client, celery_queue) == [held.pk]
    assert generation_claim(generation_id=held.pk) is not None


def test_held_prompts_go_back_in_line_oldest_first(target, settings):
    settings.KANDEV_USER_MAX_RUNNING = 1
    user = UserFactory()
    running, older, newer = (prompt(user, target=target) for _ in range(3))
    generation_claim(generation_id=running.pk)
    assert generation_claim(generation_id=newer.pk) is None
    assert generation_claim(generation_id=older.pk) is None
    queue_positions_announce()  # the older one joined the line in front of the newer one
    assert last_queue_event(newer.session)["queue"]["ahead"] == 1

    generation_end(generation=running, state=PromptGeneration.State.SUCCEEDED)

    older.refresh_from_db()
    newer.refresh_from_db()
    assert (older.queue_reason, newer.queue_reason) == (Reason.WORKER, Reason.USER_LIMIT)


def test_no_limit_when_the_setting_is_zero(target, settings):
    settings.KANDEV_USER_MAX_RUNNING = 0
    user = UserFactory()
    assert all(generation_claim(generation_id=prompt(user, target=target).pk) for _ in range(5))


def test_stop_ends_a_queued_prompt_and_the_session_is_idle(target, owner):
    queued = prompt(owner, target=target)

    session_stop(session=queued.session, user=owner)

    queued.refresh_from_db()
    queued.session.refresh_from_db()
    assert (queued.state, queued.session.state) == ("stopped", Session.State.IDLE)
