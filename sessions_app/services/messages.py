"""Transcript writes. Each write and the event describing it commit together."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from sessions_app import events as event_names
from sessions_app.models import Message, PromptGeneration, Session
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


def message_append(*, message: Message, text: str) -> None:
    """Append coalesced deltas: one UPDATE of the row and one ``message.appended`` event.

    ``message.text`` in memory is the writer's copy; only one worker streams into a row (the
    generation claim guarantees it), so writing the whole text is safe and keeps the row exact.
    """
    if not text:
        return
    offset = len(message.text)
    message.text += text
    with transaction.atomic():
        Message.objects.filter(pk=message.pk).update(text=message.text, updated_at=timezone.now())
        event_append(
            session=message.session,
            type=event_names.MESSAGE_APPENDED,
            payload={"id": message.pk, "offset": offset, "text": text},
        )


def message_finish(
    *, message: Message, status: str = Message.Status.COMPLETE, incomplete: bool = False
) -> None:
    """Close a streaming row: final text, status and the incomplete flag in one replacement."""
    message.status = status
    message.incomplete = incomplete
    with transaction.atomic():
        Message.objects.filter(pk=message.pk).update(
            text=message.text, status=status, incomplete=incomplete, updated_at=timezone.now()
        )
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
    if status is not None:
        message.status = fields["status"] = status
    if metadata is not None:
        message.metadata = fields["metadata"] = metadata
    if not fields:
        return
    with transaction.atomic():
        Message.objects.filter(pk=message.pk).update(**fields, updated_at=timezone.now())
        event_append(
            session=message.session,
            type=event_names.MESSAGE_UPDATED,
            payload={"message": message_dict(message)},
        )
