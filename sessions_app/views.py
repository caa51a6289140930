"""Pages: the live task board, a new session opened from it, and a task's page (rename,
archive, new session in it); the lockout page. A session's page and its actions are in
session_views.py.

Views stay thin: reads through selectors, writes through services, a domain error answered with
the API's status table (errors.http_status) and headers (errors.http_headers).
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.middleware import HtmxDetails

from sessions_app.board_selectors import board_columns
from sessions_app.errors import (
    CapReached,
    DomainError,
    InvalidInput,
    StateConflict,
    http_headers,
    http_status,
)
from sessions_app.forms import SessionCreateForm, TaskRenameForm
from sessions_app.frames import wall_clock_ms
from sessions_app.models import Task
from sessions_app.selectors import (
    target_default,
    targets_all,
    task_for_user,
    tasks_for_user,
)
from sessions_app.services import session_create
from sessions_app.services.task_sessions import (
    task_archive,
    task_rename,
    task_status_set,
    task_unarchive,
)
from sessions_app.workspaces.review import worktree_patch, worktree_review
from sessions_app.workspaces.selectors import projects_usable


class SignedInRequest(HttpRequest):
    """What every view here but the lockout page receives: login_required let only a signed-in
    user through, and HtmxMiddleware set ``htmx``."""

    user: User
    htmx: HtmxDetails


TASK_NOT_FOUND = "No such task."


def login_locked_out(request: HttpRequest, *_axes_args: object) -> HttpResponse:
    """django-axes' lockout answer for both logins (AXES_LOCKOUT_CALLABLE). Axes calls it with two
    or three arguments depending on the request path; none of them is needed here."""
    minutes = max(1, round(settings.AXES_COOLOFF_TIME.total_seconds() / 60))
    context = {"cooloff_minutes": minutes}
    return render(request, "registration/locked_out.html", context, status=429)


def _task_or_404(request: SignedInRequest, task_id: int) -> Task:
    task = task_for_user(user=request.user, task_id=task_id)
    if task is None:
        # Unknown and foreign tasks alike.
        raise Http404(TASK_NOT_FOUND)
    return task


def _board_query(request: SignedInRequest) -> tuple[str, bool]:
    return request.GET.get("q", "").strip(), request.GET.get("archived") == "1"


def _new_session_context(request: SignedInRequest, form: SessionCreateForm) -> dict:
    targets = targets_all()
    default = target_default(targets=targets)
    chosen = form["target"].value() or (default.pk if default else None)
    return {
        "form": form,
        "targets": targets,
        "chosen_target": str(chosen) if chosen is not None else "",
        "own_tasks": tasks_for_user(user=request.user).filter(archived_at__isnull=True),
        "chosen_task": str(form["task"].value() or ""),
        "projects": projects_usable(user=request.user),
        "chosen_project": str(form["project"].value() or ""),
    }


def _board(request: SignedInRequest, form: SessionCreateForm, *, status: int = 200) -> HttpResponse:
    query, archived = _board_query(request)
    params = urlencode(
        {k: v for k, v in (("q", query), ("archived", "1" if archived else "")) if v}
    )
    context = {
        **_new_session_context(request, form),
        "columns": board_columns(user=request.user, query=query, archived=archived),
        "query": query,
        "archived": archived,
        "ws_path": "/ws/board/" + (f"?{params}" if params else ""),
        "server_now_ms": wall_clock_ms(),
    }
    return render(request, "sessions_app/board.html", context, status=status)


@require_GET
@login_required
def board(request: SignedInRequest) -> HttpResponse:
    return _board(request, SessionCreateForm())


@require_POST
@login_required
def session_new(request: SignedInRequest) -> HttpResponse:
    """A new session: under one of the user's tasks (``task``), or under a new task."""
    form = SessionCreateForm(request.POST)
    if not form.is_valid():
        return _board(request, form, status=422)
    task = None
    if form.cleaned_data["task"]:
        task = _task_or_404(request, form.cleaned_data["task"])
    try:
        session = session_create(
            owner=request.user,
            target=form.cleaned_data["target"],
            title=form.cleaned_data["title"],
            task=task,
            project_id=form.cleaned_data["project"],
        )
    except (InvalidInput, CapReached) as error:
        # The form comes back as typed, with the reason on its field or above it.
        if isinstance(error, InvalidInput):
            field = error.field if error.field in form.fields else None
            form.add_error(field, f"{error.field.capitalize()} {error.message}.")
        else:
            form.add_error(None, error.message)
        page = _board(request, form, status=http_status(error, on_page=True))
        return with_error_headers(page, error)
    return redirect("session_detail", session_id=session.pk)


def _task_page(
    request: SignedInRequest,
    task: Task,
    *,
    rename_form: TaskRenameForm | None = None,
    session_form: SessionCreateForm | None = None,
    archive_error: str = "",
    status: int = 200,
) -> HttpResponse:
    session_form = session_form or SessionCreateForm(initial={"task": task.pk})
    context = {
        "archive_error": archive_error,
        **_new_session_context(request, session_form),
        "task": task,
        "sessions": list(task.sessions.select_related("target").order_by("-updated_at", "-id")),
        "rename_form": rename_form or TaskRenameForm(initial={"title": task.title}),
        "review": worktree_review(task_id=task.pk),
    }
    return render(request, "sessions_app/task.html", context, status=status)


@require_GET
@login_required
def task_review_view(request: SignedInRequest, task_id: int) -> HttpResponse:
    """The review section alone, which the task page fetches again when a turn ends."""
    task = _task_or_404(request, task_id)
    context = {"task": task, "review": worktree_review(task_id=task.pk)}
    return render(request, "sessions_app/partials/task_review.html", context)


@require_GET
@login_required
def task_patch_view(request: SignedInRequest, task_id: int) -> HttpResponse:
    task = _task_or_404(request, task_id)
    patch = worktree_patch(task_id=task.pk)
    if patch is None:
        raise Http404("No worktree to review.")
    response = HttpResponse(patch, content_type="text/x-diff")
    response["Content-Disposition"] = f'attachment; filename="task-{task.pk}.patch"'
    return response


@require_GET
@login_required
def task_detail(request: SignedInRequest, task_id: int) -> HttpResponse:
    return _task_page(request, _task_or_404(request, task_id))


@require_POST
@login_required
def task_rename_view(request: SignedInRequest, task_id: int) -> HttpResponse:
    task = _task_or_404(request, task_id)
    form = TaskRenameForm(request.POST)
    if form.is_valid():
        try:
            task_rename(task=task, title=form.cleaned_data["title"])
            return redirect("task_detail", task_id=task.pk)
        except InvalidInput as error:
            form.add_error("title", f"The title {error.message}.")
            return _task_page(
                request, task, rename_form=form, status=http_status(error, on_page=True)
            )
    return _task_page(request, task, rename_form=form, status=422)


@require_POST
@login_required
def task_archive_view(request: SignedInRequest, task_id: int) -> HttpResponse:
    task = _task_or_404(request, task_id)
    try:
        task_archive(task=task)
    except StateConflict as refused:
        # Not on_page: no field of the page corrects a refusal of the task's state, so the page
        # answers what the API does (409), from the one table.
        message = f"Archiving {refused.message}."
        return _task_page(request, task, archive_error=message, status=http_status(refused))
    return redirect("board")


@require_POST
@login_required
def task_unarchive_view(request: SignedInRequest, task_id: int) -> HttpResponse:
    task = _task_or_404(request, task_id)
    task_unarchive(task=task)
    return redirect("task_detail", task_id=task.pk)


@require_POST
@login_required
def task_status_view(request: SignedInRequest, task_id: int) -> HttpResponse:
    """Mark done or reopen, from the task page or the board's "Move to" (and a drag, which
    submits that same form); back to the page it came from."""
    task = _task_or_404(request, task_id)
    try:
        task_status_set(task=task, status=request.POST.get("status", ""))
    except InvalidInput as error:
        return _task_page(request, task, archive_error=f"The status {error.message}.", status=422)
    if request.POST.get("back") == "board":
        return redirect("board")
    return redirect("task_detail", task_id=task.pk)


def with_error_headers(response: HttpResponse, error: DomainError) -> HttpResponse:
    """A refused page carries what the API's answer would (a cap's Retry-After)."""
    for name, value in http_headers(error).items():
        response[name] = value
    return response
