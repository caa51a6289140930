"""The retry notice: at most one per session, updated in place, retired by deletion.

Every write locks the session row first (the same lock ``event_append`` takes), so two failures of
one session racing each other are serialised and cannot leave two notices.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from django.db import DatabaseError, transaction

from sessions_app import events as event_names
from sessions_app.ladder.models import RetryLoop, RetryNotice
from sessions_app.models import Session
from sessions_app.selectors import notice_dict
from sessions_app.services.events import event_append

logger = logging.getLogger(__name__)


def notice_upsert(
    *,
    loop: RetryLoop,
    code: str,
    reason: str,
    provider: str,
    model: str,
    attempt: int,
    max_attempts: int,
    retry_at: float,
    switched_target: str = "",
) -> RetryNotice | None:
    """Show (or move on) the session's one retry banner for a waiting loop.

    Returns None without writing when the loop is no longer live: a late failure that arrives after
    the loop was retired (success, cancel, stop) must not bring the banner back.
    """
    fields = {
        "loop": loop,
        "code": code,
        "reason": reason,
        "provider": provider,
        "model": model,
        "attempt": attempt,
        "max_attempts": max_attempts,
        "retry_at": datetime.fromtimestamp(retry_at, tz=UTC),
        "switched_target": switched_target,
    }
    with transaction.atomic():
        session = Session.objects.select_for_update().get(pk=loop.session_id)
        live = RetryLoop.objects.filter(pk=loop.pk, state__in=RetryLoop.LIVE_STATES).exists()
        if not live:
            return None
        existing = list(RetryNotice.objects.filter(session=session).order_by("-updated_at", "-id"))
        if existing:
            notice, duplicates = existing[0], existing[1:]
            if duplicates:
                _delete_notices(session=session, ids=[d.pk for d in duplicates])
            for name, value in fields.items():
                setattr(notice, name, value)
            notice.save()
        else:
            notice = RetryNotice.objects.create(session=session, **fields)
        event_append(
            session=session, type=event_names.NOTICE_UPSERTED, payload={"notice": notice_dict(notice)}
        )
    return notice


def notice_postpone(*, loop: RetryLoop, retry_at: float, reason: str) -> RetryNotice | None:
    """Move the waiting loop's banner to ``retry_at`` with ``reason`` (the target's shared health
    held the attempt back). Nothing is written when the loop has no live notice."""
    with transaction.atomic():
        session = Session.objects.select_for_update().get(pk=loop.session_id)
        notice = (
            RetryNotice.objects.filter(session=session, loop=loop, loop__state=RetryLoop.State.WAITING)
            .order_by("-updated_at", "-id")
            .first()
        )
        if notice is None:
            return None
        notice.retry_at = datetime.fromtimestamp(retry_at, tz=UTC)
        notice.reason = reason[: RetryNotice._meta.get_field("reason").max_length]
        notice.save(update_fields=["retry_at", "reason", "updated_at"])
        event_append(
            session=session, type=event_names.NOTICE_UPSERTED, payload={"notice": notice_dict(notice)}
        )
    return notice


def notices_retire(*, session_id: int) -> list[int]:
    """Delete every retry notice of the session, with a deletion event, and return their ids.

    A failure while listing or deleting is logged and swallowed (in a savepoint, so the caller's
    transaction survives): the sweeper's cleanup finishes the job later.
    """
    try:
        with transaction.atomic():
            session = Session.objects.select_for_update().get(pk=session_id)
            ids = list(RetryNotice.objects.filter(session=session).values_list("id", flat=True))
            if ids:
                _delete_notices(session=session, ids=ids)
            return ids
    except DatabaseError:
        logger.warning("retiring retry notices of session %s failed", session_id, exc_info=True)
        return []


def notices_cleanup() -> int:
    """Retire notices whose loop is no longer live (left behind by a swallowed failure)."""
    stale_sessions = (
        RetryNotice.objects.exclude(loop__state__in=RetryLoop.LIVE_STATES)
        .values_list("session_id", flat=True)
        .distinct()
    )
    return sum(len(notices_retire(session_id=session_id)) for session_id in list(stale_sessions))


def _delete_notices(*, session: Session, ids: list[int]) -> None:
    RetryNotice.objects.filter(pk__in=ids).delete()
    event_append(session=session, type=event_names.NOTICE_DELETED, payload={"ids": ids})
