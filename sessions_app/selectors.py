"""Reads. Every viewer-facing read goes through here so permissions are decided in one place."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import OuterRef, Q, QuerySet, Subquery

from recovery import wording
from sessions_app import event_types as event_names
from sessions_app.errors import SessionNotFound
from sessions_app.ladder.models import AttemptRecord, RetryNotice
from sessions_app.models import (
    ApiToken,
    Message,
    PromptGeneration,
    ProviderTarget,
    Session,
    SessionEvent,
    Task,
)


def message_dict(message: Message) -> dict[str, Any]:
    """The one MessageDict shape (sessions_app/event_types.py) used by events, snapshots and the
    API."""
    return {
        "id": message.pk,
        "role": message.role,
        "text": message.full_text,
        "status": message.status,
        "incomplete": message.incomplete,
        "generation": message.generation.number if message.generation is not None else None,
        "metadata": message.metadata,
        "created": message.created_at.isoformat(),
    }


def _visible_to(user: User) -> Q:
    return Q(owner=user) | Q(members=user)


def sessions_for_user(*, user: User) -> QuerySet[Session]:
    """Sessions the user owns or is a member of, newest activity first."""
    if not user.is_authenticated:
        return Session.objects.none()
    ids = Session.objects.filter(_visible_to(user)).values("pk")
    return Session.objects.filter(pk__in=ids).select_related("target", "task")


def session_for_user(*, user: User, session_id: int) -> Session:
    """The session if the user may view it. Unknown and foreign ids raise the same error."""
    try:
        return sessions_for_user(user=user).get(pk=session_id)
    except (Session.DoesNotExist, ValueError, TypeError):
        raise SessionNotFound(session_id) from None


def user_may_view(*, user: User, session: Session) -> bool:
    if not user.is_authenticated:
        return False
    return session.owner_id == user.pk or session.members.filter(pk=user.pk).exists()


def tasks_for_user(*, user: User) -> QuerySet[Task]:
    """The board: the user's tasks with their sessions (prefetched, each with its target)."""
    if not user.is_authenticated:
        return Task.objects.none()
    return Task.objects.filter(owner=user).prefetch_related("sessions", "sessions__target")


def task_for_user(*, user: User, task_id: int) -> Task | None:
    """The user's own task (archived or not); None for unknown and foreign ids alike."""
    try:
        return tasks_for_user(user=user).filter(pk=int(task_id)).first()
    except (ValueError, TypeError):
        return None


# The board's columns, most urgent first: (Task.status, heading).
def target_default(*, targets: QuerySet[ProviderTarget]) -> ProviderTarget | None:
    """The target the new-session form preselects: the plain Mock provider when there is one
    (what the README presents first), else the first direct provider, else the first target."""
    listed = list(targets)
    for kinds in (
        (ProviderTarget.Kind.MOCK,),
        (ProviderTarget.Kind.ANTHROPIC, ProviderTarget.Kind.OPENAI),
    ):
        for target in listed:
            if target.kind in kinds:
                return target
    return listed[0] if listed else None


def sessions_recent(*, user: User, limit: int = 30) -> list[Session]:
    """The session page's compact list: the sessions the user may view, newest activity first,
    with their task (archived tasks' sessions left out)."""
    return list(
        sessions_for_user(user=user)
        .filter(task__archived_at__isnull=True)
        .annotate(
            active_generation_state=Subquery(
                PromptGeneration.objects.filter(
                    session=OuterRef("pk"), state__in=PromptGeneration.ACTIVE_STATES
                )
                .order_by("-number")
                .values("state")[:1]
            )
        )
        .order_by("-updated_at", "-id")[:limit]
    )


def api_tokens_for_user(*, user: User) -> QuerySet[ApiToken]:
    """The user's tokens that are not revoked (expired ones included: they say so), newest
    first."""
    return ApiToken.objects.filter(user=user, revoked_at__isnull=True).order_by(
        "-created_at", "-id"
    )


def targets_all() -> QuerySet[ProviderTarget]:
    return ProviderTarget.objects.all()


def target_fallback_names(*, target: ProviderTarget) -> list[str]:
    """The target's fallbacks in order, by name (the ladder's budget records names)."""
    return [link.fallback.name for link in target.fallback_links.select_related("fallback")]


def session_recovery_actions(*, session: Session) -> list[str]:
    """Resume and Start fresh are offered while the session needs attention and has a prompt to
    re-run, primary first and as the last failure's code allows (``wording.recovery_actions``,
    which generation_end pushes too), so the snapshot and the pushed events cannot disagree."""
    if session.state != Session.State.NEEDS_ATTENTION:
        return []
    if not Message.objects.filter(session=session, role=Message.Role.USER).exists():
        return []
    last = PromptGeneration.objects.filter(session=session).order_by("-number").first()
    return list(wording.recovery_actions(last.error_code if last is not None else ""))


def session_explanation(*, session: Session) -> str:
    """Why the session needs attention: the last generation's (redacted) error message, shown on
    the recovery card. Empty in every other state, like the session.updated events say."""
    if session.state != Session.State.NEEDS_ATTENTION:
        return ""
    last = PromptGeneration.objects.filter(session=session).order_by("-number").first()
    return last.error_message if last is not None else ""


def session_switch_targets(*, session: Session) -> list[dict[str, Any]]:
    """The targets a failure card offers to switch to, by id and name: every target but the
    session's own (targets are the operator's and any signed-in person may pick one), only while
    the session needs attention."""
    if session.state != Session.State.NEEDS_ATTENTION:
        return []
    others = ProviderTarget.objects.exclude(pk=session.target_id).order_by("name")
    return [{"id": t.pk, "name": t.name} for t in others]


def session_fresh_restore(*, session: Session) -> dict[str, Any] | None:
    """What the card says about Start fresh putting the workspace back, exactly as the last
    session.updated event told every viewer (measured once, when the session came to need
    attention): ``{"files": n}``, ``{"unavailable": why}``, or None."""
    if session.state != Session.State.NEEDS_ATTENTION:
        return None
    payload = (
        SessionEvent.objects.filter(session=session, type=event_names.SESSION_UPDATED)
        .order_by("-seq")
        .values_list("payload", flat=True)
        .first()
    )
    return payload.get("fresh_restore") if isinstance(payload, dict) else None


def notice_dict(notice: RetryNotice) -> dict[str, Any]:
    """The one serialisation of a notice: API, snapshot and pushes all use it."""
    return {
        "id": notice.pk,
        "reason": notice.reason,
        "code": notice.code,
        "provider": notice.provider,
        "model": notice.model,
        "attempt": notice.attempt,
        "max_attempts": notice.max_attempts,
        "retry_at": notice.retry_at.isoformat(),
        "retry_at_ms": int(notice.retry_at.timestamp() * 1000),
        "switched_target": notice.switched_target,
    }


def session_notice(*, session: Session) -> dict[str, Any] | None:
    """The session's live retry banner; retired notices are kept for the admin, never shown."""
    notice = (
        RetryNotice.objects.live().filter(session=session).order_by("-updated_at", "-id").first()
    )
    return notice_dict(notice) if notice is not None else None


def session_messages(*, session: Session) -> QuerySet[Message]:
    return Message.objects.filter(session=session).select_related("generation").order_by("id")


def session_snapshot(*, session: Session) -> dict[str, Any]:
    """The session as a viewer first sees it, with the ``last_seq`` it is consistent with.

    Read in one REPEATABLE READ transaction when we own the transaction, so rows and last_seq are
    one point in time. Inside an outer transaction (tests, callers that already hold one) the
    isolation level can't be changed, so last_seq is read first: the rows may then be newer than
    last_seq, and applying the later events again is idempotent (created/updated replace by id,
    appended carries its offset, deleted of a missing id is a no-op).
    """
    own_transaction = not connection.in_atomic_block
    with transaction.atomic():
        if own_transaction and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        row = Session.objects.select_related("target").get(pk=session.pk)
        messages = [message_dict(m) for m in session_messages(session=row)]
        notice = session_notice(session=row)
        recovery_actions = session_recovery_actions(session=row)
        explanation = session_explanation(session=row)
        queue = session_queue(session=row)
        switch_targets = session_switch_targets(session=row)
        fresh_restore = session_fresh_restore(session=row)
    return {
        "id": row.pk,
        "title": row.title,
        "state": row.state,
        "target": {"id": row.target_id, "name": row.target.name, "kind": row.target.kind},
        "messages": messages,
        "notice": notice,
        "recovery_actions": recovery_actions,
        "explanation": explanation,
        "queue": queue,
        "switch_targets": switch_targets,
        "fresh_restore": fresh_restore,
        "last_seq": row.last_seq,
    }


def _queue_group(generation: PromptGeneration) -> tuple[str, int | None]:
    """Generations in one group wait for the same thing, in creation order."""
    if generation.queue_reason == PromptGeneration.QueueReason.USER_LIMIT:
        return generation.queue_reason, generation.requested_by_id
    if generation.queue_reason == PromptGeneration.QueueReason.WORKSPACE:
        return generation.queue_reason, generation.session.task_id
    return generation.queue_reason, None


def queue_ahead(*, generation: PromptGeneration) -> int:
    """How many queued generations wait for the same thing as this one and came first
    (sessions_app/services/lifecycle/queued.py)."""
    earlier = PromptGeneration.objects.filter(
        state=PromptGeneration.State.QUEUED, queue_reason=generation.queue_reason
    ).filter(
        Q(created_at__lt=generation.created_at)
        | Q(created_at=generation.created_at, pk__lt=generation.pk)
    )
    if generation.queue_reason == PromptGeneration.QueueReason.USER_LIMIT:
        earlier = earlier.filter(requested_by_id=generation.requested_by_id)
    if generation.queue_reason == PromptGeneration.QueueReason.WORKSPACE:
        earlier = earlier.filter(session__task_id=generation.session.task_id)
    return earlier.count()


def queue_positions(*, limit: int) -> list[tuple[PromptGeneration, int]]:
    """The first ``limit`` queued generations in line order, each with its number ahead, from
    one read."""
    queued = (
        PromptGeneration.objects.select_related("session")
        .filter(state=PromptGeneration.State.QUEUED)
        .order_by("created_at", "pk")[:limit]
    )
    seen: dict[tuple[str, int | None], int] = {}
    positions = []
    for generation in queued:
        group = _queue_group(generation)
        positions.append((generation, seen.get(group, 0)))
        seen[group] = seen.get(group, 0) + 1
    return positions


def agent_slot_waiters() -> set[int | None]:
    """The people with a prompt for an ACP agent waiting to start: queued for a worker or for an
    agent slot (one held behind the person's own running prompts waits for them, not for a slot).
    What a fair share of the box's agent slots is counted against (sessions_app/agent/slots.py)."""
    return set(
        PromptGeneration.objects.filter(
            state=PromptGeneration.State.QUEUED, session__target__kind=ProviderTarget.Kind.ACP
        )
        .exclude(queue_reason=PromptGeneration.QueueReason.USER_LIMIT)
        .order_by()  # the model's ordering would join the DISTINCT
        .values_list("requested_by_id", flat=True)
        .distinct()
    )


def queue_dict(generation: PromptGeneration, ahead: int) -> dict[str, Any]:
    """The one shape of a place in line: snapshot, board, API and session.updated all use it."""
    return {"ahead": ahead, "reason": generation.queue_reason, "generation": generation.number}


def session_queue(*, session: Session) -> dict[str, Any] | None:
    """The session's place in line while its prompt is queued, else None."""
    generation = (
        PromptGeneration.objects.filter(session=session, state=PromptGeneration.State.QUEUED)
        .order_by("-number")
        .first()
    )
    if generation is None:
        return None
    return queue_dict(generation, queue_ahead(generation=generation))


def sessions_queue(*, session_ids: list[int]) -> dict[int, dict[str, Any]]:
    """Places in line for the board: session id -> queue dict, for those of ``session_ids``
    whose prompt is queued."""
    queued = PromptGeneration.objects.filter(
        session_id__in=session_ids, state=PromptGeneration.State.QUEUED
    )
    return {g.session_id: queue_dict(g, queue_ahead(generation=g)) for g in queued}


def events_after(*, session: Session, after_seq: int, limit: int = 500) -> list[dict[str, Any]]:
    """Durable events with seq > after_seq, in order, as {"seq", "event", "payload"} dicts."""
    rows = (
        SessionEvent.objects.filter(session=session, seq__gt=after_seq)
        .order_by("seq")
        .values("seq", "type", "payload")[:limit]
    )
    return [{"seq": r["seq"], "event": r["type"], "payload": r["payload"]} for r in rows]


def calls_failed(*, generation: PromptGeneration) -> int:
    """How many provider calls of the generation failed: the retries its answer recovered from
    (a call the target's shared health held back was never made, and has no record)."""
    return AttemptRecord.objects.filter(generation=generation).exclude(decision="success").count()
