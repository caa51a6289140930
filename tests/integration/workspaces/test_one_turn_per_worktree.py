"""A bound task's worktree is one checkout: two sessions of the task never run turns at once. The
second waits in line, told why and its place, and goes back in line when the first stops."""

from __future__ import annotations

import json

import pytest

from sessions_app import event_types as ev
from sessions_app.models import PromptGeneration, SessionEvent
from sessions_app.services import generation_claim, generation_end, prompt_submit
from sessions_app.services.lifecycle.queued import queue_positions_announce
from sessions_app.services.task_sessions import task_create
from sessions_app.templatetags.transcript import queue_label
from tests.support.factories import SessionFactory

pytestmark = pytest.mark.django_db

Reason = PromptGeneration.QueueReason
State = PromptGeneration.State


def prompt(owner, *, target, task) -> PromptGeneration:
    session = SessionFactory(owner=owner, target=target, title="Work on it", task=task)
    return prompt_submit(session=session, user=owner, text="go on")


def last_queue(generation: PromptGeneration) -> dict:
    event = SessionEvent.objects.filter(session=generation.session, type=ev.SESSION_UPDATED).last()
    return event.payload["queue"]


def broker_generation_ids(redis_client, queue: str) -> list[int]:
    return [
        json.loads(json.loads(raw)["headers"]["argsrepr"].replace("(", "[").replace(",)", "]"))[0]
        for raw in redis_client.lrange(queue, 0, -1)
    ]


def test_it_holds_the_second_session_of_a_bound_task_until_the_first_turn_ends(
    owner, target, bound_task, settings, redis_client, celery_queue,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    settings.KANDEV_USER_MAX_RUNNING = 0
    first, second, third = (prompt(owner, target=target, task=bound_task) for _ in range(3))

    assert generation_claim(generation_id=first.pk) is not None
    assert generation_claim(generation_id=second.pk) is None
    assert generation_claim(generation_id=third.pk) is None
    queue_positions_announce()
    second.refresh_from_db()
    third.refresh_from_db()
    assert (second.state, second.queue_reason) == (State.QUEUED, Reason.WORKSPACE)
    assert last_queue(second) == {"ahead": 0, "reason": "workspace", "generation": 1}
    assert last_queue(third)["ahead"] == 1
    assert queue_label(last_queue(third)) == (
        "1 ahead, waiting for the other session of this task to finish"
    )

    redis_client.delete(celery_queue)
    with django_capture_on_commit_callbacks(execute=True):
        generation_end(generation=first, state=State.SUCCEEDED)

    second.refresh_from_db()
    third.refresh_from_db()
    # The oldest held one goes back in line, alone: the other still waits for the worktree.
    assert (second.queue_reason, third.queue_reason) == (Reason.WORKER, Reason.WORKSPACE)
    assert broker_generation_ids(redis_client, celery_queue) == [second.pk]
    assert generation_claim(generation_id=second.pk) is not None
    assert generation_claim(generation_id=third.pk) is None


def test_it_lets_sessions_of_an_unbound_task_and_of_different_bound_tasks_run_together(
    owner, target, project, settings
):
    settings.KANDEV_USER_MAX_RUNNING = 0  # only the worktree may hold a prompt back here
    unbound = task_create(owner=owner, title="Plan")
    other_bound = task_create(owner=owner, title="Other", project_id=project.pk)
    bound = task_create(owner=owner, title="One", project_id=project.pk)
    generations = [
        prompt(owner, target=target, task=unbound),
        prompt(owner, target=target, task=unbound),
        prompt(owner, target=target, task=bound),
        prompt(owner, target=target, task=other_bound),
    ]

    assert all(generation_claim(generation_id=g.pk) is not None for g in generations)
