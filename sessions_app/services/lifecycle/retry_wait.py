"""A retry wait's two rows: the RetryLoop's end and the RetryNotice (the banner), shown and retired.

Only the lifecycle calls these: the banner is shown when a generation enters ``waiting_retry``,
and a loop ends (retiring the banner, for the reason its end state gives) when its generation
ends, when a Start fresh, target switch or cancel disarms the session's loops, or when the ladder
hands a turn back (``retry_hand_back``). Retiring marks the row (retired_at, why, the loop whose
end did it) and appends a deletion event, so every viewer's banner goes while the admin keeps the
history. Every notice write locks the session row first (the same lock ``event_append`` takes),
so two failures of one session racing each other are serialised and cannot leave two notices.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import DatabaseError, transaction
from django.utils import timezone

from sessions_app import event_types as event_names
from sessions_app import metrics
from sessions_app.ladder.models import RetryLoop, RetryNotice
from sessions_app.models import Session
from sessions_app.selectors import notice_dict
from sessions_app.services.event_log import event_append
from sessions_app.text_rules import storable_text

logger = logging.getLogger(__name__)
LoopState = RetryLoop.State
Retired = RetryNotice.Retired

# Why a loop's end retires its session's banner, by the state the loop ends in.
RETIRED_BY_LOOP_END: Mapping[str, str] = {
    LoopState.SUCCEEDED: Retired.SUCCEEDED,
    LoopState.EXHAUSTED: Retired.EXHAUSTED,
    LoopState.FAILED: Retired.FAILED,
    LoopState.CANCELLED: Retired.CANCELLED,
    LoopState.DISARMED: Retired.REPLACED,
}
LOOP_END_STATES = frozenset(RETIRED_BY_LOOP_END)
_RETRY_OUTCOMES: dict[str, str] = {
    LoopState.SUCCEEDED: "succeeded",
    LoopState.EXHAUSTED: "exhausted",
    LoopState.CANCELLED: "cancelled",
}


@dataclass(frozen=True, slots=True)
class RetryBanner:
    """What the banner of a scheduled retry says (``notice_upsert``'s fields)."""

    code: str
    reason: str
    provider: str
    model: str
    attempt: int
    max_attempts: int
    retry_at: float
    switched_target: str = ""


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
            return _notice_write(loop=loop, fields=fields)
    except DatabaseError:
        # Non-fatal: the retry stays scheduled without its banner, and no second notice is
        # created when the existing one could not be read or updated.
        logger.warning("writing the retry notice of loop %s failed", loop.pk, exc_info=True)
        return None


def _notice_write(*, loop: RetryLoop, fields: dict) -> RetryNotice | None:
    session = Session.objects.select_for_update(no_key=True).get(pk=loop.session_id)
    if not RetryLoop.objects.filter(pk=loop.pk, state__in=RetryLoop.LIVE_STATES).exists():
        return None
    existing = list(
        RetryNotice.objects.live().filter(session=session).order_by("-updated_at", "-id")
    )
    if existing:
        notice, duplicates = existing[0], existing[1:]
        if duplicates:
            _retire(session=session, ids=[d.pk for d in duplicates], reason=Retired.DUPLICATE)
        for name, value in fields.items():
            setattr(notice, name, value)
        notice.save()
    else:
        notice = RetryNotice.objects.create(session=session, **fields)
    event_append(
        session=session, type=event_names.NOTICE_UPSERTED, payload={"notice": notice_dict(notice)}
    )
    return notice


def notices_retire(*, session_id: int, reason: str, by: RetryLoop | None = None) -> list[int]:
    """Retire every live retry notice of the session (``reason``: a ``RetryNotice.Retired``
    value; ``by``: the loop whose end retires them), with a deletion event, and return their ids.

    A failure while listing or retiring is logged and swallowed (in a savepoint, so the caller's
    transaction survives): the sweeper's cleanup finishes the job later.
    """
    try:
        with transaction.atomic():
            session = Session.objects.select_for_update(no_key=True).get(pk=session_id)
            ids = list(
                RetryNotice.objects.live().filter(session=session).values_list("id", flat=True)
            )
            if ids:
                _retire(session=session, ids=ids, reason=reason, by=by)
            return ids
    except DatabaseError:
        logger.warning("retiring retry notices of session %s failed", session_id, exc_info=True)
        return []


def notice_retire_recovered(*, generation_id: int) -> None:
    """The retried call reached the viewer: the provider recovered, so the banner goes now,
    before the turn ends (its loop ends with the generation)."""
    loop = RetryLoop.objects.filter(generation_id=generation_id, state=LoopState.RUNNING).first()
    if loop is not None:
        notices_retire(session_id=loop.session_id, reason=Retired.RECOVERED, by=loop)


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


def _retire(*, session: Session, ids: list[int], reason: str, by: RetryLoop | None = None) -> None:
    RetryNotice.objects.filter(pk__in=ids, retired_at__isnull=True).update(
        retired_at=timezone.now(), retired_reason=reason, retired_by=by
    )
    event_append(session=session, type=event_names.NOTICE_DELETED, payload={"ids": ids})


def _loop_end(*, loop: RetryLoop, state: str) -> None:
    """End a live loop in ``state`` and retire the session's banner for the matching reason."""
    if state not in LOOP_END_STATES:
        raise ValueError(f"{state!r} does not end a retry loop")
    now = timezone.now()
    RetryLoop.objects.filter(pk=loop.pk).update(
        state=state, next_attempt_at=None, ended_at=now, updated_at=now
    )
    loop.state = state
    notices_retire(session_id=loop.session_id, reason=RETIRED_BY_LOOP_END[state], by=loop)
    outcome = _RETRY_OUTCOMES.get(state)
    if outcome is not None:
        metrics.count(metrics.RETRIES, outcome=outcome, target=loop.target_name)
    if state == LoopState.SUCCEEDED and loop.created_at is not None:
        recovered_s = (now - loop.created_at).total_seconds()
        metrics.observe(metrics.RECOVERY_SECONDS, recovered_s, target=loop.target_name)


def generation_loop_end(*, generation_id: int, state: str) -> None:
    """The generation ended: end its loop, if one is still live, in ``state``."""
    with transaction.atomic():
        loop = (
            RetryLoop.objects.select_for_update(no_key=True)
            .filter(generation_id=generation_id, state__in=RetryLoop.LIVE_STATES)
            .first()
        )
        if loop is not None:
            _loop_end(loop=loop, state=state)


def session_loops_end(*, session_id: int, state: str = LoopState.DISARMED) -> list[RetryLoop]:
    """End every live loop of the session in ``state`` (disarmed by a Start fresh, a Resume or a
    target switch; cancelled). The banner is retired even when no loop was live, so a stale one
    never survives. Returns the loops ended."""
    with transaction.atomic():
        loops = list(
            RetryLoop.objects.select_for_update(no_key=True).filter(
                session_id=session_id, state__in=RetryLoop.LIVE_STATES
            )
        )
        for loop in loops:
            _loop_end(loop=loop, state=state)
        notices_retire(session_id=session_id, reason=RETIRED_BY_LOOP_END[state])
    return loops


def retry_hand_back(*, loop: RetryLoop, transient: bool) -> None:
    """The ladder hands the turn back to the person: its loop ends exhausted (a transient failure
    whose budget ran out) or failed, and the generation's own end follows from the Turn."""
    _loop_end(loop=loop, state=LoopState.EXHAUSTED if transient else LoopState.FAILED)
