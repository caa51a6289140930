"""The retry notice while it is live: moved to a later time, or told the attempt is being made.

Showing and retiring it belong to the lifecycle (``services/lifecycle/retry_wait.py``): the
banner appears when a generation starts waiting and goes when the wait ends. Viewers only ever
read live rows (``selectors.session_notice``).

Every write locks the session row first (the same lock ``event_append`` takes), so two failures of
one session racing each other are serialised and cannot leave two notices.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

from django.db import DatabaseError, transaction
from django.utils import timezone

from sessions_app import event_types as event_names
from sessions_app.ladder.models import RetryLoop, RetryNotice
from sessions_app.models import Session
from sessions_app.selectors import notice_dict
from sessions_app.services.event_log import event_append

logger = logging.getLogger(__name__)
Retired = RetryNotice.Retired


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
    session = Session.objects.select_for_update(no_key=True).get(pk=loop.session_id)
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
