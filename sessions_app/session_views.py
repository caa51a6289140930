"""A session's live page and its actions: the composer's prompt, Regenerate, an edit, Stop,
the banner's Cancel, the recovery card's Resume / Start fresh and "Try another target".

Every action is declared with ``session_action``, which answers its domain errors in one place
with the API's status table (errors.http_status; a per-person cap, CapReached, is a 429 with
Retry-After and the typed text kept) and its success over htmx or with a redirect.
The composer posts over htmx with ``hx-swap="none"``: the transcript and the Send/Stop toggle
change only through the websocket (the database is the truth and every viewer sees the same), so
the HTTP answer carries nothing but the composer's error line. The retry banner's Cancel and the
recovery card's Resume / Start fresh work the same way. An approval card's buttons answer with
the presser's own note under the card instead (``session_approval_decide``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET, require_POST

from recovery import wording
from sessions_app.approvals.selectors import session_approval, session_page_snapshot
from sessions_app.approvals.services import approval_decide
from sessions_app.effects import wording as effects_wording
from sessions_app.effects.services import fresh_restore_plan
from sessions_app.effects.snapshot import RestorePlan
from sessions_app.errors import (
    ApprovalDecided,
    ApprovalNotFound,
    CapReached,
    DomainError,
    GenerationActive,
    InvalidInput,
    RetryWaiting,
    SessionNotFound,
    http_status,
)
from sessions_app.forms import PromptForm
from sessions_app.frames import wall_clock_ms
from sessions_app.models import Session
from sessions_app.selectors import (
    session_for_user,
    session_recovery_actions,
    sessions_recent,
)
from sessions_app.services import prompt_submit, session_stop
from sessions_app.services.prompts import (
    answer_regenerate,
    prompt_edit,
    retry_cancel,
    session_recover,
)
from sessions_app.services.targets import session_target_switch
from sessions_app.services.versions import version_show
from sessions_app.views import SignedInRequest, with_error_headers

NOT_FOUND = "No such session."


def _session_or_404(request: SignedInRequest, session_id: int) -> Session:
    try:
        return session_for_user(user=request.user, session_id=session_id)
    except SessionNotFound:
        # Unknown and foreign ids take this one path, so the 404 is byte-for-byte the same.
        raise Http404(NOT_FOUND) from None


def _composer_error(message: str, *, status: int) -> HttpResponse:
    return HttpResponse(
        format_html(
            '<p id="composer-error" class="form-error" role="alert" hx-swap-oob="true">{}</p>',
            message,
        ),
        status=status,
    )


def _done_elsewhere() -> HttpResponse:
    """Success for a button the websocket swaps away (Stop, Resume, Start fresh): no body, since
    an out-of-band swap answered to a detached button finds no target (htmx:oobErrorNoTarget).
    The stale composer error is cleared by the session.updated frame instead."""
    return HttpResponse(status=204)


def _session_page(
    request: SignedInRequest,
    session: Session,
    *,
    draft: str = "",
    error: str = "",
    approval_note: dict[str, object] | None = None,
    status: int = 200,
) -> HttpResponse:
    context = {
        "snapshot": session_page_snapshot(session=session),
        # {"id", "text"}: what the last press on that approval card got (a refused answer).
        "approval_note": approval_note,
        "ws_path": f"/ws/sessions/{session.pk}/",
        "max_prompt_chars": settings.KANDEV_MAX_PROMPT_CHARS,
        "draft": draft,
        "error": error,
        "recent_sessions": sessions_recent(user=request.user),
        # The retry banner's countdown measures the browser's clock against this (see frames.py).
        "server_now_ms": wall_clock_ms(),
    }
    return render(request, "sessions_app/session.html", context, status=status)


@require_GET
@login_required
def session_detail(request: SignedInRequest, session_id: int) -> HttpResponse:
    return _session_page(request, _session_or_404(request, session_id))


def session_action(
    *,
    invalid: str,
    busy: str = wording.STILL_WORKING,
    done: Callable[[], HttpResponse] | None = None,
    draft_field: str | None = None,
) -> Callable[[Callable[[SignedInRequest, Session], object]], Callable[..., HttpResponse]]:
    """A session page's button or form post: ``act(request, session)`` does the work through a
    service, and every domain error it raises is answered here, the same way for every action.

    The status is errors.http_status's (the API's table). Over htmx the answer is the composer's
    error line (``_composer_error``), on a plain form post the session page with it; an
    InvalidInput reads ``invalid`` with its message, a GenerationActive ``busy`` (a RetryWaiting
    says the retry is pending), a CapReached its own words and a Retry-After. ``draft_field``
    names the posted text the composer keeps after a refusal. Success is ``done()`` over htmx
    (``_done_elsewhere`` unless given) and a redirect to the session page otherwise."""

    def decorate(act: Callable[[SignedInRequest, Session], object]) -> Callable[..., HttpResponse]:
        @require_POST
        @login_required
        @wraps(act)
        def view(request: SignedInRequest, session_id: int) -> HttpResponse:
            session = _session_or_404(request, session_id)
            try:
                act(request, session)
            except SessionNotFound:
                raise Http404(NOT_FOUND) from None
            except DomainError as error:
                message = _refusal_message(error, invalid=invalid, busy=busy)
                draft = request.POST.get(draft_field, "") if draft_field else ""
                return _refused(request, session, message, draft=draft, error=error)
            return _answered(request, session.pk, done=done or _done_elsewhere)

        return view

    return decorate


def _refusal_message(error: DomainError, *, invalid: str, busy: str) -> str:
    if isinstance(error, InvalidInput):
        return invalid.format(error.message)
    if isinstance(error, RetryWaiting):
        return wording.RETRY_PENDING
    if isinstance(error, GenerationActive):
        return busy
    if isinstance(error, CapReached):
        return error.message
    raise error


def _refused(
    request: SignedInRequest, session: Session, message: str, *, draft: str, error: DomainError
) -> HttpResponse:
    status = http_status(error, on_page=True)
    if request.htmx:
        response = _composer_error(message, status=status)
    else:
        response = _session_page(request, session, draft=draft, error=message, status=status)
    return with_error_headers(response, error)


def _answered(
    request: SignedInRequest, session_id: int, *, done: Callable[[], HttpResponse]
) -> HttpResponse:
    """A session action that worked: over htmx ``done()`` (the websocket shows the result to
    every viewer), on a plain form post back to the session page."""
    if request.htmx:
        return done()
    return redirect("session_detail", session_id=session_id)


def _prompt_sent() -> HttpResponse:
    # An empty error line: live.js clears the composer only on this 200, so a refused prompt's
    # text stays for Send to work later.
    return _composer_error("", status=200)


@session_action(invalid="Message {}.", done=_prompt_sent, draft_field="text")
def session_prompt(request: SignedInRequest, session: Session) -> None:
    form = PromptForm(request.POST)
    if not form.is_valid():
        problems = form.errors.get("text", ["is invalid"])
        raise InvalidInput("text", " ".join(str(problem) for problem in problems))
    prompt_submit(session=session, user=request.user, text=form.cleaned_data["text"])


@session_action(invalid="Cannot regenerate: {}.")
def session_regenerate(request: SignedInRequest, session: Session) -> None:
    """The last answer's Regenerate: the new answer streams in for every viewer."""
    answer_regenerate(session=session, user=request.user)


@session_action(invalid="Message {}.", draft_field="text")
def session_edit(request: SignedInRequest, session: Session) -> None:
    """A prompt's Edit (``?message=`` names it; the last prompt without): the edited text is sent
    as a new version of it, branching from where it stood."""
    prompt_edit(
        session=session,
        user=request.user,
        text=request.POST.get("text", ""),
        message_id=_message_id(request.GET.get("message")),
    )


@session_action(invalid="Cannot show that version: {}.")
def session_version(request: SignedInRequest, session: Session) -> None:
    """The "< 2 / 3 >" switcher: every viewer's transcript follows over the websocket."""
    message_id = _message_id(request.POST.get("message"))
    if message_id is None:
        raise InvalidInput("message", "must name a message")
    version_show(session=session, user=request.user, message_id=message_id)


def _message_id(raw: str | None) -> int | None:
    if raw in (None, ""):
        return None
    if not raw.isdigit():
        raise InvalidInput("message", "must be a message id")
    return int(raw)


@session_action(invalid="Cannot switch: {}.")
def session_switch_target(request: SignedInRequest, session: Session) -> None:
    """The failure card's "Try another target": every viewer's card follows over the websocket."""
    session_target_switch(
        session=session, user=request.user, target_id=request.POST.get("target", "")
    )


@session_action(invalid="Cannot stop: {}.")
def session_stop_view(request: SignedInRequest, session: Session) -> None:
    session_stop(session=session, user=request.user)


@require_POST
@login_required
def session_approval_decide(request: SignedInRequest, session_id: int) -> HttpResponse:
    """An approval card's button: the agent's option, for every viewer's card (first one wins).

    The card itself changes through the websocket for everyone, the presser included, so the
    answer here carries only the presser's note under the card (htmx swaps it in; hx-target is
    that note, which no frame replaces): empty when the answer was taken, "Already answered:
    Allowed once by bob at 12:03." when someone was first (409), why an answer was refused
    (422). Without script the same answers come as the session page, or a redirect back to the
    card. Another session's or person's approval is the session 404."""
    session = _session_or_404(request, session_id)
    raw_id = request.POST.get("approval", "")
    approval_id = int(raw_id) if raw_id.isdigit() else None
    try:
        if approval_id is None:
            raise InvalidInput("approval", "no such request")
        approval_decide(
            approval_id=approval_id,
            user=request.user,
            option_id=request.POST.get("option", ""),
            session_id=session.pk,
        )
    except ApprovalNotFound:
        raise Http404(NOT_FOUND) from None
    except (ApprovalDecided, InvalidInput) as error:
        return _approval_refused(request, session, approval_id, error)
    if request.htmx:
        return HttpResponse("")  # the note, emptied
    return redirect(f"{reverse('session_detail', args=[session.pk])}#approval-{approval_id}")


def _approval_refused(
    request: SignedInRequest,
    session: Session,
    approval_id: int | None,
    error: ApprovalDecided | InvalidInput,
) -> HttpResponse:
    note = _approval_note(session, approval_id, error)
    status = http_status(error, on_page=True)
    if request.htmx:
        response = HttpResponse(note, status=status)
    else:
        response = _session_page(
            request,
            session,
            error="" if approval_id is not None else note,
            approval_note={"id": approval_id, "text": note},
            status=status,
        )
    return with_error_headers(response, error)


def _approval_note(
    session: Session, approval_id: int | None, error: ApprovalDecided | InvalidInput
) -> SafeString | str:
    if isinstance(error, InvalidInput):
        return f"Cannot answer: {error.message}."
    approval = session_approval(session_id=session.pk, approval_id=approval_id or 0)
    if approval is None:  # gone since (its session's rows were deleted): nothing to show
        return "Someone answered this request first."
    return render_to_string("sessions_app/partials/approval_note.html", {"a": approval})


# Usually another viewer pressed the button first: the run they started is the answer.
@session_action(invalid="Cannot recover: {}.", busy="The agent is already working on this session.")
def session_recover_view(request: SignedInRequest, session: Session) -> None:
    """The recovery card's Resume and Start fresh (``action`` = resume | fresh)."""
    session_recover(
        session=session,
        user=request.user,
        action=request.POST.get("action", ""),
        restore=request.POST.get("restore") == "1",
    )


# Each group of the confirmation lists at most this many paths; its heading keeps the exact count.
CONFIRM_LIST_LIMIT = 500


@require_GET
@login_required
def session_fresh_confirm(request: SignedInRequest, session_id: int) -> HttpResponse:
    """Start fresh's confirmation before it puts the workspace back: file by file, what will be
    removed, restored and brought back, then Confirm (posts ``restore=1``) or Back. Over htmx the
    card's content, else a page of its own (the card's link works without JavaScript)."""
    session = _session_or_404(request, session_id)
    needs_attention = session.state == Session.State.NEEDS_ATTENTION and "fresh" in (
        session_recovery_actions(session=session)
    )
    plan = fresh_restore_plan(session_id=session.pk) if needs_attention else None
    context = {
        "session_id": session.pk,
        "session_title": session.title,
        "needs_attention": needs_attention,
        "plan": plan,
        "groups": _restore_groups(plan) if plan is not None else [],
        "summary": effects_wording.confirm_summary(plan.count) if plan is not None else "",
        "unavailable": effects_wording.RESTORE_UNAVAILABLE_UNREADABLE,
        "nothing_to_put_back": effects_wording.NOTHING_TO_PUT_BACK,
    }
    if request.htmx:
        return render(request, "sessions_app/partials/fresh_confirm.html", context)
    return render(request, "sessions_app/fresh_confirm.html", context)


def _restore_groups(plan: RestorePlan) -> list[dict[str, object]]:
    groups = (
        ("remove", plan.remove, effects_wording.remove_heading),
        ("revert", plan.revert, effects_wording.revert_heading),
        ("restore", plan.restore, effects_wording.restore_heading),
    )
    return [
        {
            "kind": kind,
            "heading": heading(len(paths)),
            "paths": sorted(paths)[:CONFIRM_LIST_LIMIT],
            "more": (
                effects_wording.more_not_listed(len(paths) - CONFIRM_LIST_LIMIT)
                if len(paths) > CONFIRM_LIST_LIMIT
                else ""
            ),
        }
        for kind, paths, heading in groups
        if paths
    ]


@require_POST
@login_required
def session_cancel_retry(request: SignedInRequest, session_id: int) -> HttpResponse:
    """The banner's Cancel. Deliberately one answer whatever happened (cancelled, nothing to
    cancel, foreign or unknown session), so it never reveals whether retry state exists; the
    banner and the recovery card change for every viewer through the websocket."""
    retry_cancel(session_id=session_id, user=request.user)
    return _answered(request, session_id, done=_done_elsewhere)
