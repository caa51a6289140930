"""The session event log: seq allocation under concurrency, push after commit, convergence."""

from __future__ import annotations

import threading

import pytest
from channels.layers import get_channel_layer
from django.db import connection

from sessions_app import event_types as ev
from sessions_app.models import Message, PromptGeneration, SessionEvent
from sessions_app.selectors import events_after, session_snapshot
from sessions_app.services import (
    event_append,
    generation_claim,
    generation_end,
    message_append,
    message_create,
    message_finish,
    message_retract,
    prompt_submit,
)


@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_get_unique_gap_free_seqs(session):
    writers, per_writer = 6, 15
    barrier = threading.Barrier(writers)
    failures: list[BaseException] = []

    def write() -> None:
        try:
            barrier.wait()
            for i in range(per_writer):
                event_append(session=session, type=ev.SESSION_UPDATED, payload={"i": i})
        except BaseException as error:  # noqa: BLE001  (reported by the assertion below)
            failures.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=write) for _ in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    seqs = list(SessionEvent.objects.filter(session=session).values_list("seq", flat=True))
    assert seqs == list(range(1, writers * per_writer + 1))
    session.refresh_from_db()
    assert session.last_seq == writers * per_writer


@pytest.mark.django_db(transaction=True)
async def test_a_committed_event_is_pushed_to_the_sessions_group(session):
    from channels.db import database_sync_to_async

    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(ev.group_name(session.pk), channel)
    try:
        appended = await database_sync_to_async(event_append)(
            session=session,
            type=ev.SESSION_UPDATED,
            payload={"state": "idle", "recovery_actions": []},
        )
        received = await layer.receive(channel)
    finally:
        await layer.group_discard(ev.group_name(session.pk), channel)
    assert received == {
        "type": "session.event",
        "seq": appended.seq,
        "event": ev.SESSION_UPDATED,
        "payload": {"state": "idle", "recovery_actions": []},
    }


@pytest.mark.django_db(transaction=True)
def test_nothing_is_pushed_when_the_writer_rolls_back(session):
    from asgiref.sync import async_to_sync
    from django.db import transaction

    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(ev.group_name(session.pk), channel)

    class Abort(Exception):
        pass

    with pytest.raises(Abort), transaction.atomic():
        event_append(session=session, type=ev.SESSION_UPDATED, payload={"state": "x"})
        raise Abort
    event_append(session=session, type=ev.SESSION_UPDATED, payload={"state": "y"})
    received = async_to_sync(layer.receive)(channel)
    async_to_sync(layer.group_discard)(ev.group_name(session.pk), channel)
    assert (received["seq"], received["payload"]) == (1, {"state": "y"})


def apply_events(snapshot: dict, events: list[dict]) -> dict:
    """What a viewer does: apply events in seq order to a snapshot (idempotently)."""
    state = {**snapshot, "messages": {m["id"]: dict(m) for m in snapshot["messages"]}}
    for event in events:
        if event["seq"] <= state["last_seq"]:
            continue
        payload, kind = event["payload"], event["event"]
        if kind in (ev.MESSAGE_CREATED, ev.MESSAGE_UPDATED):
            state["messages"][payload["message"]["id"]] = dict(payload["message"])
        elif kind == ev.MESSAGE_APPENDED:
            message = state["messages"][payload["id"]]
            if len(message["text"]) == payload["offset"]:
                message["text"] += payload["text"]
        elif kind == ev.MESSAGE_DELETED:
            for message_id in payload["ids"]:
                state["messages"].pop(message_id, None)
        elif kind == ev.SESSION_UPDATED:
            state["state"] = payload["state"]
            state["recovery_actions"] = payload["recovery_actions"]
        state["last_seq"] = event["seq"]
    state["messages"] = [state["messages"][k] for k in sorted(state["messages"])]
    return state


@pytest.mark.django_db
def test_a_stale_snapshot_plus_later_events_equals_a_fresh_snapshot(session, owner):
    stale = session_snapshot(session=session)
    generation = prompt_submit(session=session, user=owner, text="hello")
    generation_claim(generation_id=generation.pk)
    answer = message_create(
        session=session,
        generation=generation,
        role=Message.Role.ASSISTANT,
        text="Hel",
        status=Message.Status.STREAMING,
    )
    message_append(message=answer, text="lo, ")
    message_append(message=answer, text="world")
    message_finish(message=answer)
    doomed = message_create(
        session=session, generation=generation, role=Message.Role.THINKING, text="hmm"
    )
    message_retract(session=session, ids=[doomed.pk])
    generation_end(generation=generation, state=PromptGeneration.State.SUCCEEDED)

    fresh = session_snapshot(session=session)
    caught_up = apply_events(stale, events_after(session=session, after_seq=stale["last_seq"]))
    assert caught_up == fresh
    assert [m["text"] for m in fresh["messages"]] == ["hello", "Hello, world"]
    # Replaying the whole log again on top changes nothing.
    assert apply_events(fresh, events_after(session=session, after_seq=0)) == fresh


@pytest.mark.django_db(transaction=True)
def test_a_snapshot_taken_outside_a_transaction_reads_one_point_in_time(session, owner):
    prompt_submit(session=session, user=owner, text="hello")
    assert not connection.in_atomic_block  # so the REPEATABLE READ path is the one under test
    snapshot = session_snapshot(session=session)
    assert snapshot["last_seq"] == 3
    assert [m["text"] for m in snapshot["messages"]] == ["hello"]
    assert snapshot["state"] == "queued" and snapshot["notice"] is None
