"""Reads for the board: a person's own tasks in fixed columns by state, each session with the
badge it shows and its place in line. Kept apart from selectors.py, which reads one session and
its transcript, because the board reads many tasks at once and shapes them for cards.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db.models import OuterRef, Prefetch, Q, QuerySet, Subquery

from sessions_app.ladder.models import RetryNotice
from sessions_app.models import PromptGeneration, Session, Task
from sessions_app.selectors import sessions_queue

BOARD_COLUMNS = (
    (Task.Status.NEEDS_ATTENTION, "Needs attention"),
    (Task.Status.IN_PROGRESS, "Working"),
    (Task.Status.OPEN, "Open"),
    (Task.Status.DONE, "Done"),
)
BOARD_SEARCH_MAX_CHARS = 200


def _board_sessions() -> QuerySet[Session]:
    """A card's sessions with what their badge needs: the active generation's state (a queued
    prompt shows "Queued") and the live banner's retry time (the countdown)."""
    active = PromptGeneration.objects.filter(
        session=OuterRef("pk"), state__in=PromptGeneration.ACTIVE_STATES
    ).order_by("-number")
    notice = RetryNotice.objects.live().filter(session=OuterRef("pk")).order_by("-updated_at")
    return (
        Session.objects.select_related("target")
        .annotate(
            active_generation_state=Subquery(active.values("state")[:1]),
            retry_at=Subquery(notice.values("retry_at")[:1]),
        )
        .order_by("-updated_at", "-id")
    )


def board_session_state(session: Session) -> str:
    """What a board badge says: the session's state, or "queued" while its prompt waits for a
    worker (the generation state machine's own word)."""
    if getattr(session, "active_generation_state", None) == PromptGeneration.State.QUEUED:
        return PromptGeneration.State.QUEUED
    return session.state


def board_tasks(*, user: User, query: str = "", archived: bool = False) -> QuerySet[Task]:
    """The user's own tasks for the board (never a member's or anyone else's): live ones, or the
    archived ones; ``query`` matches a task's or one of its sessions' title, any case."""
    if not user.is_authenticated:
        return Task.objects.none()
    tasks = Task.objects.filter(owner=user, archived_at__isnull=not archived)
    query = " ".join(query.split())[:BOARD_SEARCH_MAX_CHARS]
    if query:
        matching = Task.objects.filter(
            Q(title__icontains=query) | Q(sessions__title__icontains=query), owner=user
        ).values("pk")
        tasks = tasks.filter(pk__in=matching)
    return tasks.prefetch_related(Prefetch("sessions", queryset=_board_sessions()))


def board_columns(*, user: User, query: str = "", archived: bool = False) -> list[dict[str, Any]]:
    """The board as columns by task state, each {"status", "label", "tasks"}; every column is
    there, empty or not, so cards move between fixed places. Each session carries ``queue``,
    its place in line when its prompt is queued."""
    tasks = list(board_tasks(user=user, query=query, archived=archived))
    sessions = [session for task in tasks for session in task.sessions.all()]
    queues = sessions_queue(session_ids=[session.pk for session in sessions])
    for session in sessions:
        session.queue = queues.get(session.pk)  # a queued session's place in line, else None
    by_status: dict[str, list[Task]] = {status: [] for status, _ in BOARD_COLUMNS}
    for task in tasks:
        by_status.setdefault(task.status, []).append(task)
    return [
        {"status": status, "label": label, "tasks": by_status[status]}
        for status, label in BOARD_COLUMNS
    ]
