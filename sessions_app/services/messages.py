"""Transcript writes. Each write and the event describing it commit together."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Max, Sum
from django.db.models.functions import Length
from django.utils import timezone

from sessions_app import events as event_names
from sessions_app.models import Message, MessageChunk, PromptGeneration, Session
from sessions_app.selectors import message_dict
from sessions_app.services.events import event_append


def message_create(
    *,
    session: Session,
    generation: PromptGeneration | None,
    role: str,
    text: str = "",
    status: str = Message.Status.COMPLETE,
    metadata: dict[str, Any] | None = None,
) -> Message:
    """Write one transcript row and its ``message.created`` event."""
    with transaction.atomic():
        message = Message.objects.create(
            session=session,
            generation=generation,
            role=role,
            text=text,
            status=status,
            metadata=metadata or {},
        )
        message._streamed = _Streamed(length=len(text), next_position=1)
        event_append(
            session=session,
            type=event_names.MESSAGE_CREATED,
            payload={"message": message_dict(message)},
        )
    return message


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
            length=len(message.text)
            + (chunks.aggregate(n=Sum(Length("text")))["n"] or 0),
            next_position=(chunks.aggregate(p=Max("position"))["p"] or 0) + 1,
        )
        message._streamed = known
    return known


def message_append(*, message: Message, text: str) -> None:
    """Append coalesced deltas: one INSERT of the new text (a ``MessageChunk``) and one
    ``message.appended`` event, so a flush costs what it adds, however long the message is.

    Only one worker streams into a row (the generation claim guarantees it), so the writer's
    count of length and positions is exact.
    """
    if not text:
        return
    streamed = _streamed(message)
    offset = streamed.length
    with transaction.atomic():
        MessageChunk.objects.create(message_id=message.pk, position=streamed.next_position, text=text)
        Message.objects.filter(pk=message.pk).update(updated_at=timezone.now())
        event_append(
            session=message.session,
            type=event_names.MESSAGE_APPENDED,
            payload={"id": message.pk, "offset": offset, "text": text},
        )
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
        message.text = row.full_text + tail
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
        message.text = fields["text"] = text
        message.streamed_text = None
    if status is not None:
        message.status = fields["status"] = status
    if metadata is not None:
        message.metadata = fields["metadata"] = metadata
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
