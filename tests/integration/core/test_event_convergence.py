"""Late viewers converge: a stale snapshot plus the durable events after it equals a fresh
snapshot, across streaming, tools, retries with their banner, failures, retraction and stop."""

from __future__ import annotations

import random

import pytest

from recovery.mock.testing import SplitClock
from sessions_app.agent.runner import generation_retry, generation_run
from sessions_app.ladder.models import RetryLoop
from sessions_app.models import Message
from sessions_app.selectors import events_after, session_snapshot
from sessions_app.services import message_retract, prompt_submit, session_stop
from sessions_app.services.prompts import session_recover

from .event_replay import snapshot_apply

pytestmark = pytest.mark.django_db(transaction=True)


def run(chat, owner, text, clock):
    generation = prompt_submit(session=chat, user=owner, text=text)
    generation_run(generation_id=generation.pk, clock=clock, rng=random.Random(3))
    return generation


def assert_converges(chat, stale):
    fresh = session_snapshot(session=chat)
    events = events_after(session=chat, after_seq=stale["last_seq"], limit=100_000)
    assert snapshot_apply(stale, events) == fresh


def test_every_stale_snapshot_plus_its_events_equals_a_fresh_one(chat, owner):
    clock = SplitClock()
    stale = [session_snapshot(session=chat)]

    run(chat, owner, "/slow-stream:40 tell me a story", clock)
    appended = [
        e for e in events_after(session=chat, after_seq=0) if e["event"] == "message.appended"
    ]
    assert len(appended) >= 2  # the story really streamed in several coalesced pieces
    stale.append(session_snapshot(session=chat))
    run(chat, owner, '/tool append_note {"text": "buy milk"} save this', clock)

    generation = run(chat, owner, "/overloaded:1 retry me", clock)
    stale.append(session_snapshot(session=chat))  # taken while the banner is up
    assert stale[-1]["notice"] is not None
    loop = RetryLoop.objects.get(generation=generation)
    generation_retry(loop_id=loop.pk, attempt=loop.attempt, clock=clock, rng=random.Random(3))

    run(chat, owner, "/overloaded-after-text:1 fail after text", clock)
    stale.append(session_snapshot(session=chat))  # needs attention, with the explanation
    assert stale[-1]["recovery_actions"] == ["resume", "fresh"] and stale[-1]["explanation"]
    resumed = session_recover(session=chat, user=owner, action="resume")
    generation_run(generation_id=resumed.pk, clock=clock)

    first_answer = Message.objects.filter(session=chat, role="assistant").order_by("id").first()
    message_retract(session=chat, ids=[first_answer.pk])
    queued = prompt_submit(session=chat, user=owner, text="never runs")
    session_stop(session=chat, user=owner)
    assert queued.pk  # stopped before any worker claimed it

    for snapshot in stale:
        assert_converges(chat, snapshot)
