"""The retry notice: at most one live per session, updated in place, retired in place.

Retiring marks the row (retired_at, why, the loop whose end did it) and appends a deletion event,
so every viewer's banner goes while the admin keeps the history. Viewers only ever read live rows
(``selectors.session_notice``).

Every write locks the session row first (the same lock ``event_append`` takes), so two failures of
one session racing each other are serialised and cannot leave two notices.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

from django.db import DatabaseError, transaction
from django.utils import timezone

from sessions_app import events as event_names
from sessions_app.ladder.models import RetryLoop, RetryNotice
from sessions_app.models import Session
from sessions_app.selectors import notice_dict
from sessions_app.services.events import event_append
from sessions_app.text_rules import storable_text

logger = logging.getLogger(__name__)
Retired = RetryNotice.Retired


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
    the loop was retired (success, cancel, stop) must not bring the banner back. Returns None, and
    logs, when the write itself failed: a banner is never worth failing the turn for.
    """
    fields = {
        "loop": loop,
        "code": code,
        "reason": reason,
        "provider": provider,
        # What the agent reported as its model: its words, so made storable.
        "model": storable_text(model),
        "attempt": attempt,
        "max_attempts": max_attempts,
        "retry_at": datetime.fromtimestamp(retry_at, tz=UTC),
        "switched_target": switched_target,
    }
    try:
        with transaction.atomic():  # a savepoint: a failed write leaves the caller's work intact
            notice = _notice_write(loop=loop, fields=fields)
    except DatabaseError:
        # Non-fatal (requirements AC .25): the retry stays scheduled without its banner, and no
        # second notice is created when the existing one could not be read or updated.
        logger.warning("writing the retry notice of loop %s failed", loop.pk, exc_info=True)
        return None
    return notice


def _notice_write(*, loop: RetryLoop, fields: dict) -> RetryNotice | None:
    session = Session.objects.select_for_update().get(pk=loop.session_id)
    live = RetryLoop.objects.filter(pk=loop.pk, state__in=RetryLoop.LIVE_STATES).exists()
    if not live:
        return None
    existing = list(
        RetryNotice.objects.live().filter(session=session).order_by("-updated_at", "-id")
    )
    if existing:
        notice, duplicates = existing[0], existing[1:]
        if duplicates:
            _retire_notices(
                session=session, ids=[d.pk for d in duplicates], reason=Retired.DUPLICATE
            )
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

    def postpone(notice: RetryNotice) -> list[str]:
        notice.retry_at = datetime.fromtimestamp(retry_at, tz=UTC)
        notice.reason = reason[: RetryNotice._meta.get_field("reason").max_length]
        return ["retry_at", "reason"]

    with transaction.atomic():
        return _notice_change(loop=loop, only_waiting=True, change=postpone)


def notice_retrying(*, loop: RetryLoop) -> RetryNotice | None:
    """The claimed attempt is being made: the loop's banner says "Retrying now…" from the server's
    own clock, so no viewer keeps counting down a second the server already spent (a page judges
    the server's clock from when a frame reached it, which lags by the push's latency). The banner
    itself stays until the retried call reaches the viewer. Nothing is written when the loop has
    no live notice; a failed write is logged and never fails the attempt."""

    def retrying(notice: RetryNotice) -> list[str]:
        notice.retry_at = min(notice.retry_at, timezone.now())
        return ["retry_at"]

    try:
        with transaction.atomic():  # a savepoint: a failed write leaves the claim intact
            return _notice_change(loop=loop, only_waiting=False, change=retrying)
    except DatabaseError:
        logger.warning(
            "marking the retry notice of loop %s as retrying failed", loop.pk, exc_info=True
        )
        return None


def _notice_change(
    *, loop: RetryLoop, only_waiting: bool, change: Callable[[RetryNotice], list[str]]
) -> RetryNotice | None:
    """Apply ``change`` (which returns the fields it set) to the loop's live notice under the
    session's lock and tell the viewers; None, writing nothing, when it has none."""
    session = Session.objects.select_for_update().get(pk=loop.session_id)
    notices = RetryNotice.objects.live().filter(session=session, loop=loop)
    if only_waiting:
        notices = notices.filter(loop__state=RetryLoop.State.WAITING)
    notice = notices.order_by("-updated_at", "-id").first()
    if notice is None:
        return None
    notice.save(update_fields=[*change(notice), "updated_at"])
    event_append(
        session=session, type=event_names.NOTICE_UPSERTED, payload={"notice": notice_dict(notice)}
    )
    return notice


def notices_retire(
    *, session_id: int, reason: str, by: RetryLoop | None = None
) -> list[int]:
    """Retire every live retry notice of the session (``reason``: a ``RetryNotice.Retired``
    value; ``by``: the loop whose end retires them), with a deletion event, and return their ids.

    A failure while listing or retiring is logged and swallowed (in a savepoint, so the caller's
    transaction survives): the sweeper's cleanup finishes the job later.
    """
    try:
        with transaction.atomic():
            session = Session.objects.select_for_update().get(pk=session_id)
            ids = list(
                RetryNotice.objects.live().filter(session=session).values_list(
                    "id", flat=True
                )
            )
            if ids:
                _retire_notices(session=session, ids=ids, reason=reason, by=by)
            return ids
    except DatabaseError:
        logger.warning("retiring retry notices of session %s failed", session_id, exc_info=True)
        return []


def notices_cleanup() -> int:
    """Retire live notices whose loop is no longer live (left behind by a swallowed failure)."""
    stale_sessions = (
        RetryNotice.objects.live()
        .exclude(loop__state__in=RetryLoop.LIVE_STATES)
        .values_list("session_id", flat=True)
        .distinct()
    )
    return sum(
        len(notices_retire(session_id=session_id, reason=Retired.CLEANUP))
        for session_id in list(stale_sessions)
    )


def retire_reason_for_loop_end(state: str) -> str:
    """Why a loop's end retires its session's notices, from the state the loop ends in."""
    reasons: dict[str, str] = {
        RetryLoop.State.SUCCEEDED: Retired.SUCCEEDED,
        RetryLoop.State.EXHAUSTED: Retired.EXHAUSTED,
        RetryLoop.State.FAILED: Retired.FAILED,
        RetryLoop.State.CANCELLED: Retired.CANCELLED,
        RetryLoop.State.DISARMED: Retired.REPLACED,
    }
    return reasons.get(state, Retired.CLEANUP)


def _retire_notices(
    *, session: Session, ids: list[int], reason: str, by: RetryLoop | None = None
) -> None:
    RetryNotice.objects.filter(pk__in=ids, retired_at__isnull=True).update(
        retired_at=timezone.now(), retired_reason=reason, retired_by=by
    )
    event_append(session=session, type=event_names.NOTICE_DELETED, payload={"ids": ids})
