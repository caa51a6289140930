"""The durable session event log: allocate the next seq, write the event, push after commit."""

from __future__ import annotations

import json
import time
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from sessions_app import event_types as event_names
from sessions_app.models import Session, SessionEvent
from sessions_app.push import board_push, event_push
from sessions_app.text_rules import storable_json

# The session's next seq and the event, in one statement: UPDATE ... RETURNING takes the session
# row lock (concurrent writers get unique, gap-free seqs in commit order) and the INSERT uses the
# seq it returns. Every transcript write and state change appends events, so this is one round
# trip instead of the ORM's four (savepoint, locked read, update, insert) plus a release.
# The two parts every statement appending an event shares (message_append adds its rows).
NEXT_SEQ_CTE = f"""seq AS (
    UPDATE {Session._meta.db_table} SET last_seq = last_seq + 1 WHERE id = %(session)s
    RETURNING last_seq, owner_id
)"""
EVENT_FROM_SEQ = (
    f"INSERT INTO {SessionEvent._meta.db_table} (session_id, seq, type, payload, created_at)\n"
    "SELECT %(session)s, last_seq, %(type)s, %(payload)s::jsonb, %(now)s FROM seq"
)
_EVENT_SQL = f"""WITH {NEXT_SEQ_CTE}
{EVENT_FROM_SEQ}
RETURNING id, seq, (SELECT owner_id FROM seq)"""


def event_append(*, session: Session, type: str, payload: dict[str, Any]) -> SessionEvent:
    """Append one event with the session's next seq and push it once the transaction commits.

    The seq is allocated under the session row lock, so concurrent writers (the worker streaming,
    a viewer pressing Stop) get unique, gap-free numbers in commit order. Callers that write rows
    the event describes should do so inside the same ``transaction.atomic()`` block so the row and
    its event become visible together.
    """
    if type not in event_names.ALL:
        raise ValueError(f"unknown session event type {type!r}")
    # jsonb refuses "\u0000" and lone surrogates in any string; an explanation may quote an
    # agent's stderr or a provider's error body.
    payload = storable_json(payload)
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            _EVENT_SQL,
            {"session": session.pk, "type": type, "payload": json.dumps(payload), "now": now},
        )
        row = cursor.fetchone()
    if row is None:
        raise Session.DoesNotExist(f"session {session.pk} does not exist")
    event_id, seq, owner_id = row
    event_push_on_commit(session_id=session.pk, seq=seq, type=type, payload=payload)
    if type in event_names.BOARD_EVENTS:
        transaction.on_commit(lambda: board_push(owner_id=owner_id))
    session.last_seq = seq
    event = SessionEvent(
        pk=event_id, session_id=session.pk, seq=seq, type=type, payload=payload, created_at=now
    )
    event._state.adding = False
    event._state.db = connection.alias
    return event


def event_push_on_commit(*, session_id: int, seq: int, type: str, payload: dict[str, Any]) -> None:
    """Push an event written in the current transaction once it commits (at once in autocommit)."""
    written_at = time.monotonic()
    transaction.on_commit(
        lambda: event_push(
            session_id=session_id, seq=seq, event=type, payload=payload, written_at=written_at
        )
    )
