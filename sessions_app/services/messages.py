"""Transcript writes. Each write and the event describing it commit together.

Every text and metadata value passes ``storable_text`` / ``storable_json`` here, the one door
transcript rows go through: what an agent, a tool or a provider sent may hold NUL or a lone
surrogate, which PostgreSQL refuses (text_rules.py says what replaces them and why)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.db.models import Exists, Max, OuterRef, Sum
from django.db.models.functions import Length
from django.utils import timezone

from sessions_app import event_types as event_names
from sessions_app.models import Message, MessageChunk, PromptGeneration, Session
from sessions_app.selectors import message_dict
from sessions_app.services.event_log import (
    EVENT_FROM_SEQ,
    NEXT_SEQ_CTE,
    event_append,
    event_push_on_commit,
)
from sessions_app.text_rules import storable_json, storable_text


def message_create(
    *,
    session: Session,
    generation: PromptGeneration | None,
    role: str,
    text: str = "",
    status: str = Message.Status.COMPLETE,
    metadata: dict[str, Any] | None = None,
) -> Message:
    """Write one transcript row and its ``message.created`` event. The row follows the session's
    tail (the last row of the branch shown) and becomes the new tail; when the tail already had a
    row below it (Regenerate or an edit moved the tail back), the rows are versions of each other
    and each says which it is."""
    text = storable_text(text)
    metadata = storable_json(metadata or {})
    with transaction.atomic():
        # The tail and whether it has a row below it already, in the lock's one round trip: the
        # sibling query below runs only for a version (or a session's first rows, a NULL tail).
        tail_id, versioned = (
            Session.objects.select_for_update(no_key=True)
            .annotate(versioned=Exists(Message.objects.filter(parent_id=OuterRef("tail_id"))))
            .values_list("tail_id", "versioned")
            .get(pk=session.pk)
        )
        message = Message.objects.create(
            session=session,
            generation=generation,
            role=role,
            text=text,
            status=status,
            metadata=metadata,
            parent_id=tail_id,
        )
        Session.objects.filter(pk=session.pk).update(tail=message)
        message._streamed = _Streamed(length=len(text), next_position=1)
        siblings = (
            list(
                Message.objects.filter(session=session, parent_id=tail_id)
                .exclude(pk=message.pk)
                .select_related("session", "generation")
            )
            if versioned or tail_id is None
            else []
        )
        if siblings:
            _versions_label(rows=[*siblings, message])
        event_append(
            session=session,
            type=event_names.MESSAGE_CREATED,
            payload={"message": message_dict(message)},
        )
    return message


def _versions_label(*, rows: list[Message]) -> None:
    """Tell each version of a row (rows with one parent, oldest first) its place: ``n`` of
    ``of``, and its neighbours' ids for the "< 2 / 3 >" switcher. The new row is labelled before
    its ``message.created`` event; the others through ``message.updated``, so viewers converge."""
    for index, row in enumerate(rows):
        version = {
            "n": index + 1,
            "of": len(rows),
            "prev": rows[index - 1].pk if index > 0 else None,
            "next": rows[index + 1].pk if index + 1 < len(rows) else None,
        }
        if row is rows[-1]:
            row.metadata = {**row.metadata, "version": version}
            Message.objects.filter(pk=row.pk).update(metadata=row.metadata)
        elif row.metadata.get("version") != version:
            message_update(message=row, metadata={**row.metadata, "version": version})


def message_start_streaming(
    *, session: Session, generation: PromptGeneration, role: str = Message.Role.ASSISTANT
) -> Message:
    """Open an empty assistant (or thinking) row that deltas will be appended to."""
    return message_create(
        session=session, generation=generation, role=role, status=Message.Status.STREAMING
    )


@dataclass(slots=True)
class _Streamed:
    """What the writer knows about the chunks of a message it streams into: how long the text
    is (``message.appended`` offsets, in code points) and the next chunk's position."""

    length: int
    next_position: int


def _streamed(message: Message) -> _Streamed:
    known = getattr(message, "_streamed", None)
    if known is None:  # a row read back from the database (a reaper, a test): ask it once
        chunks = MessageChunk.objects.filter(message_id=message.pk)
        known = _Streamed(
            length=len(message.text) + (chunks.aggregate(n=Sum(Length("text")))["n"] or 0),
            next_position=(chunks.aggregate(p=Max("position"))["p"] or 0) + 1,
        )
        message._streamed = known
    return known


# One flush of a streaming message in one statement, so one round trip: the chunk, the row's
# updated_at, the session's next seq (UPDATE ... RETURNING takes the session row lock, as in
# event_append, so seqs stay gap-free in commit order) and the message.appended event. Hundreds
# of turns flush several times a second each; the ORM's nine statements (a savepoint, a lock
# read, a write per table) cost a pooled connection nine round trips per flush and most of the
# worker's CPU once hundreds of streams flush at once.
_APPEND_SQL = f"""WITH {NEXT_SEQ_CTE}, chunk AS (
    INSERT INTO {MessageChunk._meta.db_table} (message_id, position, text)
    VALUES (%(message)s, %(position)s, %(text)s)
), row AS (
    UPDATE {Message._meta.db_table} SET updated_at = %(now)s WHERE id = %(message)s
), event AS ({EVENT_FROM_SEQ})
SELECT last_seq FROM seq"""


def message_append(*, message: Message, text: str) -> None:
    """Append coalesced deltas: one INSERT of the new text (a ``MessageChunk``) and one
    ``message.appended`` event, so a flush costs what it adds, however long the message is.
    Both are written by one statement (``_APPEND_SQL``), atomic on its own.

    Only one worker streams into a row (the generation claim guarantees it), so the writer's
    count of length and positions is exact.
    """
    if not text:
        return
    text = storable_text(text)
    streamed = _streamed(message)
    session = message.session
    payload = {"id": message.pk, "offset": streamed.length, "text": text}
    with connection.cursor() as cursor:
        cursor.execute(
            _APPEND_SQL,
            {
                "session": session.pk,
                "message": message.pk,
                "position": streamed.next_position,
                "text": text,
                "now": timezone.now(),
                "type": event_names.MESSAGE_APPENDED,
                "payload": json.dumps(payload),
            },
        )
        (seq,) = cursor.fetchone()
    event_push_on_commit(
        session_id=session.pk, seq=seq, type=event_names.MESSAGE_APPENDED, payload=payload
    )
    session.last_seq = seq
    streamed.length += len(text)
    streamed.next_position += 1


def message_finish(
    *,
    message: Message,
    status: str = Message.Status.COMPLETE,
    incomplete: bool = False,
    tail: str = "",
) -> None:
    """Close a streaming row: its chunks and ``tail`` (text the writer still held) folded into
    the row's text, status and the incomplete flag, in one replacement. The one write of a
    streamed message that costs its whole length, once."""
    with transaction.atomic():
        row = Message.objects.get(pk=message.pk)
        message.text = row.full_text + storable_text(tail)
        message.streamed_text = None
        message.status = status
        message.incomplete = incomplete
        Message.objects.filter(pk=message.pk).update(
            text=message.text, status=status, incomplete=incomplete, updated_at=timezone.now()
        )
        MessageChunk.objects.filter(message_id=message.pk).delete()
        message._streamed = None
        event_append(
            session=message.session,
            type=event_names.MESSAGE_UPDATED,
            payload={"message": message_dict(message)},
        )


def message_retract(*, session: Session, ids: Sequence[int]) -> list[int]:
    """Delete transcript rows and record the deletion so late viewers converge. Returns the ids
    that existed (retracting twice is harmless and writes no second event)."""
    with transaction.atomic():
        existing = list(
            Message.objects.filter(session=session, pk__in=list(ids)).values_list("pk", flat=True)
        )
        if not existing:
            return []
        Message.objects.filter(pk__in=existing).delete()
        event_append(session=session, type=event_names.MESSAGE_DELETED, payload={"ids": existing})
    return existing


def message_update(
    *,
    message: Message,
    text: str | None = None,
    status: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> None:
    """Revise a row in place (an ACP tool call's status, output or permission decision): one write
    of the given fields and one full-replacement ``message.updated`` event."""
    fields: dict[str, Any] = {}
    if text is not None:
        message.text = fields["text"] = storable_text(text)
        message.streamed_text = None
    if status is not None:
        message.status = fields["status"] = status
    if metadata is not None:
        message.metadata = fields["metadata"] = storable_json(metadata)
    if not fields:
        return
    with transaction.atomic():
        Message.objects.filter(pk=message.pk).update(**fields, updated_at=timezone.now())
        if text is not None:  # a replacement: nothing streamed before it stays
            MessageChunk.objects.filter(message_id=message.pk).delete()
            message._streamed = None
        event_append(
            session=message.session,
            type=event_names.MESSAGE_UPDATED,
            payload={"message": message_dict(message)},
        )
