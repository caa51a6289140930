"""Streamed text is stored as chunks: an append writes only what it adds, and every reader
(snapshot, API, model history, admin, replay) still sees the whole text, before and after the
message is finished."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client

from recovery.model_call import TextPart
from sessions_app.agent.transcript import model_call_build
from sessions_app.models import Message, MessageChunk
from sessions_app.selectors import events_after, session_snapshot
from sessions_app.services import (
    generations_reap_lost,
    message_append,
    message_create,
    message_finish,
    message_update,
)
from tests.integration.core.event_replay import snapshot_apply

pytestmark = pytest.mark.django_db


def streaming(session, text: str = "Hello") -> Message:
    return message_create(
        session=session, generation=None, role=Message.Role.ASSISTANT, text=text,
        status=Message.Status.STREAMING,
    )  # fmt: skip


def sql_parameters_while(action) -> list[str]:
    seen: list[str] = []

    def record(execute, sql, params, many, context):
        values = params.values() if isinstance(params, dict) else (params or ())
        seen.extend(p for p in values if isinstance(p, str))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        action()
    return seen


def test_an_append_sends_the_new_text_only_however_long_the_message_is(session):
    message = streaming(session, text="x" * 200_000)
    message_append(message=message, text="y" * 1_000)

    sent = sql_parameters_while(lambda: message_append(message=message, text="tail"))

    assert max(len(p) for p in sent) < 1_000
    assert "tail" in sent
    assert len(Message.objects.get(pk=message.pk).full_text) == 201_004


def test_readers_see_the_whole_text_while_it_streams(session, owner):
    message = streaming(session)
    for piece in (", wor", "ld", "!"):
        message_append(message=message, text=piece)

    (row,) = [m for m in session_snapshot(session=session)["messages"] if m["id"] == message.pk]
    assert row["text"] == "Hello, world!"
    client = Client()
    client.force_login(owner)
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert "Hello, world!" in page
    assert str(Message.objects.get(pk=message.pk)) == "assistant: Hello, world!"


def test_finishing_folds_the_chunks_into_the_row_with_the_held_tail(session):
    message = streaming(session)
    message_append(message=message, text=", wor")
    message_finish(message=message, tail="ld.")

    row = Message.objects.get(pk=message.pk)
    assert (row.text, row.full_text, row.status) == ("Hello, world.", "Hello, world.", "complete")
    assert not MessageChunk.objects.filter(message=message).exists()
    assert message.text == "Hello, world."


def test_a_message_read_back_from_the_database_appends_at_its_true_offset(session):
    message_append(message=streaming(session), text=" there")
    again = Message.objects.get(session=session)
    message_append(message=again, text=", you")

    last = events_after(session=session, after_seq=0)[-1]
    assert last["payload"]["offset"] == len("Hello there")
    assert again.__class__.objects.get(pk=again.pk).full_text == "Hello there, you"


def test_the_reaper_finishes_a_lost_workers_streamed_message_whole(session, owner):
    from sessions_app.services import generation_claim, prompt_submit

    generation = generation_claim(
        generation_id=prompt_submit(session=session, user=owner, text="go").pk
    )
    message = message_create(
        session=session, generation=generation, role=Message.Role.ASSISTANT, text="Par",
        status=Message.Status.STREAMING,
    )  # fmt: skip
    message_append(message=message, text="tial answer")
    type(generation).objects.filter(pk=generation.pk).update(heartbeat_at="2000-01-01T00:00Z")

    assert generations_reap_lost(silent_for_s=60) == [generation.pk]
    row = Message.objects.get(pk=message.pk)
    assert (row.text, row.status, row.incomplete) == ("Partial answer", "error", True)


def test_replacing_the_text_drops_what_was_streamed_before(session):
    message = streaming(session)
    message_append(message=message, text=" and more")
    message_update(message=message, text="Replaced")

    assert Message.objects.get(pk=message.pk).full_text == "Replaced"
    assert not MessageChunk.objects.filter(message=message).exists()


def test_the_model_history_carries_a_streamed_answer_whole(session, owner):
    message_create(session=session, generation=None, role=Message.Role.USER, text="Hi")
    message = streaming(session, text="An")
    message_append(message=message, text="swer")
    message_finish(message=message)

    call = model_call_build(session_id=session.pk, model="m", tools=())
    texts = [part.text for turn in call.turns for part in turn.parts if isinstance(part, TextPart)]
    assert texts == ["Hi", "Answer"]


def test_events_applied_to_a_stale_snapshot_match_a_fresh_one_while_streaming(session):
    message = streaming(session)
    stale = session_snapshot(session=session)
    for piece in (" big", " world"):
        message_append(message=message, text=piece)

    applied = snapshot_apply(stale, events_after(session=session, after_seq=stale["last_seq"]))

    assert applied["messages"] == session_snapshot(session=session)["messages"]
