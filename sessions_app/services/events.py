"""The durable session event log: allocate the next seq, write the event, push after commit."""

from __future__ import annotations

import time
from typing import Any

from django.db import transaction

from sessions_app import events as event_names
from sessions_app.models import Session, SessionEvent
from sessions_app.push import board_push, event_push


def event_append(*, session: Session, type: str, payload: dict[str, Any]) -> SessionEvent:
    """Append one event with the session's next seq and push it once the transaction commits.

    The seq is allocated under the session row lock, so concurrent writers (the worker streaming,
    a viewer pressing Stop) get unique, gap-free numbers in commit order. Callers that write rows
    the event describes should do so inside the same ``transaction.atomic()`` block so the row and
    its event become visible together.
    """
    if type not in event_names.ALL:
        raise ValueError(f"unknown session event type {type!r}")
    with transaction.atomic():
        last_seq, owner_id = (
            Session.objects.select_for_update()
            .values_list("last_seq", "owner_id")
            .get(pk=session.pk)
        )
        seq = last_seq + 1
        Session.objects.filter(pk=session.pk).update(last_seq=seq)
        event = SessionEvent.objects.create(
            session_id=session.pk, seq=seq, type=type, payload=payload
        )
        event_push_on_commit(session_id=session.pk, seq=seq, type=type, payload=payload)
        if type in event_names.BOARD_EVENTS:
            transaction.on_commit(lambda: board_push(owner_id=owner_id))
    session.last_seq = seq
    return event


def event_push_on_commit(*, session_id: int, seq: int, type: str, payload: dict[str, Any]) -> None:
    """Push an event written in the current transaction once it commits (at once in autocommit)."""
    written_at = time.monotonic()
    transaction.on_commit(
        lambda: event_push(
            session_id=session_id, seq=seq, event=type, payload=payload, written_at=written_at
        )
    )
