"""A worker killed in the middle of a run: its heartbeat goes silent and the reaper hands the
turn back to the person instead of leaving the session "running" forever."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from django.db import connection
from django.utils import timezone

from sessions_app.agent import watch
from sessions_app.agent.runner import generation_run
from sessions_app.models import PromptGeneration, Session
from sessions_app.selectors import session_snapshot
from sessions_app.services import (
    generation_claim,
    generations_reap_lost,
    message_append,
    message_start_streaming,
    prompt_submit,
)

pytestmark = pytest.mark.django_db(transaction=True)


def running(session, user, *, silent_for_s: float) -> PromptGeneration:
    generation = prompt_submit(session=session, user=user, text="go")
    generation = generation_claim(generation_id=generation.pk)
    PromptGeneration.objects.filter(pk=generation.pk).update(
        heartbeat_at=timezone.now() - dt.timedelta(seconds=silent_for_s)
    )
    return generation


def test_a_generation_whose_worker_went_silent_is_handed_back_with_its_partial_text(session, owner):
    generation = running(session, owner, silent_for_s=120)
    partial = message_start_streaming(session=session, generation=generation)
    message_append(message=partial, text="Half an")
    message_append(message=partial, text=" answer")

    assert generations_reap_lost(silent_for_s=60) == [generation.pk]

    generation.refresh_from_db()
    session.refresh_from_db()
    partial.refresh_from_db()
    assert (generation.state, generation.error_code) == ("failed", "worker_lost")
    assert session.state == Session.State.NEEDS_ATTENTION
    assert session_snapshot(session=session)["recovery_actions"] == ["resume", "fresh"]
    assert (partial.text, partial.incomplete, partial.status) == ("Half an answer", True, "error")
    # The killed worker's task comes back (acks_late) and must not run the turn again.
    assert generation_run(generation_id=generation.pk) is None


def test_a_generation_with_a_recent_heartbeat_is_left_running(session, owner):
    generation = running(session, owner, silent_for_s=5)

    assert generations_reap_lost(silent_for_s=60) == []
    generation.refresh_from_db()
    assert generation.state == "running"


def test_the_stop_watcher_keeps_the_heartbeat_fresh(session, owner, monkeypatch):
    generation = running(session, owner, silent_for_s=600)
    monkeypatch.setattr(watch, "HEARTBEAT_INTERVAL_S", 0.0)
    beaten = threading.Event()

    class NeverCancelled:
        def cancel(self) -> None:
            raise AssertionError("nobody pressed Stop")

    with watch.StopWatcher(
        generation_id=generation.pk, cancel=NeverCancelled(), poll_interval_s=0.01
    ):
        for _ in range(200):
            generation.refresh_from_db()
            if generation.heartbeat_at > timezone.now() - dt.timedelta(seconds=5):
                beaten.set()
                break
            beaten.wait(0.01)
    connection.close()

    assert beaten.is_set()
    assert generations_reap_lost(silent_for_s=60) == []
