"""The versioned JSON API, mounted at /api/ (routes under /api/v1/, OpenAPI at /api/openapi.json).

Views here only translate HTTP to services and selectors and domain errors to status codes
(errors.HTTP_STATUS, the table the pages use too): SessionNotFound and TokenNotFound -> 404 (one
body for unknown and foreign ids), InvalidInput -> 422 with the field, UnknownReference (a body
field naming a target or task that is not there) -> 404, StateConflict and GenerationActive ->
409, CapReached (a per-person cap, services/caps.py) -> 429 with Retry-After, an oversized body
-> 413, a body that is not JSON -> 400, no live token -> 401.

Every operation's ``response`` lists all of these that it can answer, so the OpenAPI document says
what the API does; tests/integration/core/test_openapi_fuzz.py (schemathesis) holds it to that.
422 is kept for requests the published schema itself calls invalid: what the schema can say (a
blank title, a prompt over the limit) it says.

Targets belong to the operator: the API lists them (name and model; never an agent, URL or
variable name) and refuses to create one with a 403 for every token, staff included. Staff set
targets up in the admin or with `manage.py target_add`.
"""

from __future__ import annotations

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI, Status

from recovery import wording
from sessions_app import selectors, services
from sessions_app.api_auth import BearerTokenAuth, TokenRequest, api_token_revoke
from sessions_app.api_schemas import (
    ApiTokenOut,
    ApprovalDecideIn,
    ApprovalOut,
    CancelRetryOut,
    CapReachedOut,
    ErrorOut,
    EventOut,
    PromptIn,
    PromptOut,
    RecoverIn,
    SessionDetail,
    SessionIn,
    SessionOut,
    SessionPatchIn,
    StopOut,
    TargetOut,
    TaskIn,
    TaskOut,
    TaskPatchIn,
    ValidationErrorOut,
)
from sessions_app.approvals.services import approval_decide
from sessions_app.errors import (
    ApprovalDecided,
    ApprovalNotFound,
    CapReached,
    GenerationActive,
    InvalidInput,
    RetryWaiting,
    SessionNotFound,
    StateConflict,
    TokenNotFound,
    UnknownReference,
    http_headers,
    http_status,
)
from sessions_app.models import ProviderTarget, Session, Task
from sessions_app.services import prompts, targets, task_sessions
from sessions_app.workspaces.selectors import task_projects

api = NinjaAPI(
    title="Kandev Web API",
    version="1",
    auth=BearerTokenAuth(),
    urls_namespace="api",
    docs_url="/docs",
)

NOT_FOUND = {"detail": "Not found."}
TARGETS_ARE_THE_OPERATORS = {
    "detail": "Targets are set up by an operator, in the admin or with `manage.py target_add`; "
    "the API only lists them."
}
EVENTS_PAGE_LIMIT = 1000

# What an operation can answer besides its success, for its ``response`` (and so the document).
AUTH = {401: ErrorOut}  # no token, or an unknown, revoked or expired one
FIELDS = {422: ValidationErrorOut}  # a path, query or body field the schema refuses
JSON_BODY = {400: ErrorOut, 413: ErrorOut}  # the body is not JSON / is too large
MISSING = {404: ErrorOut}  # the session (or token, or a target/task the body names) is not there
CONFLICT = {409: ErrorOut}  # well formed, but the current state refuses it
LIMITED = {429: CapReachedOut}  # the caller reached a per-person cap (services/caps.py)


def _sentence(message: str) -> str:
    return f"{message[:1].upper()}{message[1:]}."


@api.exception_handler(SessionNotFound)
@api.exception_handler(TokenNotFound)
@api.exception_handler(ApprovalNotFound)
def _not_found(
    request: HttpRequest, exc: SessionNotFound | TokenNotFound | ApprovalNotFound
) -> HttpResponse:
    return api.create_response(request, NOT_FOUND, status=http_status(exc))


@api.exception_handler(InvalidInput)
def _invalid(request: HttpRequest, exc: InvalidInput) -> HttpResponse:
    detail = [{"loc": ["body", exc.field], "msg": exc.message, "type": "value_error"}]
    return api.create_response(request, {"detail": detail}, status=http_status(exc))


@api.exception_handler(UnknownReference)
@api.exception_handler(StateConflict)
def _refused_sentence(request: HttpRequest, exc: UnknownReference | StateConflict) -> HttpResponse:
    return api.create_response(request, {"detail": _sentence(exc.message)}, status=http_status(exc))


@api.exception_handler(ApprovalDecided)
def _already_decided(request: HttpRequest, exc: ApprovalDecided) -> HttpResponse:
    detail = "This request was already answered, timed out or was cancelled."
    return api.create_response(request, {"detail": detail}, status=http_status(exc))


@api.exception_handler(GenerationActive)
def _busy(request: HttpRequest, exc: GenerationActive) -> HttpResponse:
    detail = "A prompt is already running in this session; stop it or wait for it to finish."
    if isinstance(exc, RetryWaiting):
        detail = wording.RETRY_PENDING
    return api.create_response(request, {"detail": detail}, status=http_status(exc))


@api.exception_handler(CapReached)
def _cap_reached(request: HttpRequest, exc: CapReached) -> HttpResponse:
    body = {
        "detail": exc.message,
        "cap": exc.cap,
        "limit": exc.limit,
        "retry_after": exc.retry_after,
    }
    response = api.create_response(request, body, status=http_status(exc))
    for name, value in http_headers(exc).items():
        response[name] = value
    return response


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return api.create_response(request, {"detail": "Request body is too large."}, status=413)


def _target_out(target: ProviderTarget) -> dict:
    # What a person picks a target by: its name and model, and whether its agent will ask them
    # before it edits or runs anything. How it runs (kind, agent, base URL, key variable,
    # fallbacks) is the operator's business and stays in the admin.
    return {
        "id": target.pk,
        "name": target.name,
        "model": target.model,
        "permission_policy": target.permission_policy,
    }


def _task_out(task: Task, *, project: int | None = None) -> dict:
    return {
        "id": task.pk,
        "project": project,
        "title": task.title,
        "status": task.status,
        "archived": task.archived_at is not None,
        "created": task.created_at,
        "sessions": [s.pk for s in task.sessions.all()],
    }


def _session_out(session: Session) -> dict:
    return {
        "id": session.pk,
        "task": session.task_id,
        "target": session.target_id,
        "title": session.title,
        "state": session.state,
    }


@api.get("/v1/targets", response={200: list[TargetOut], **AUTH})
def targets_list(request: TokenRequest) -> list[dict]:
    return [_target_out(t) for t in selectors.targets_all()]


@api.post("/v1/targets", response={403: ErrorOut, **AUTH})
def targets_create(request: TokenRequest) -> Status:
    """Always 403: a target's agent, URL and key variable decide what the worker runs and where
    it sends keys and prompts, so only staff set one up, and not through the API. The body is
    never read."""
    return Status(403, TARGETS_ARE_THE_OPERATORS)


@api.get("/v1/tasks", response={200: list[TaskOut], **AUTH})
def tasks_list(request: TokenRequest) -> list[dict]:
    tasks = list(selectors.tasks_for_user(user=request.auth))
    bound = task_projects(task_ids=[task.pk for task in tasks])
    return [_task_out(task, project=bound.get(task.pk)) for task in tasks]


@api.post("/v1/tasks", response={201: TaskOut, **AUTH, **FIELDS, **JSON_BODY, **MISSING})
def tasks_create(request: TokenRequest, payload: TaskIn) -> Status:
    task = services.task_create(owner=request.auth, title=payload.title, project_id=payload.project)
    return Status(201, _task_out(task, project=payload.project))


@api.patch(
    "/v1/tasks/{task_id}",
    response={200: TaskOut, **AUTH, **FIELDS, **JSON_BODY, **MISSING, **CONFLICT},
)
def tasks_update(request: TokenRequest, task_id: int, payload: TaskPatchIn) -> Status | dict:
    """Rename, archive or unarchive, mark done or reopen one of the caller's tasks; a foreign id
    is a plain 404, and archiving while one of its prompts is queued, running or waiting
    answers 409."""
    task = selectors.task_for_user(user=request.auth, task_id=task_id)
    if task is None:
        return Status(404, NOT_FOUND)
    if payload.title is not None:
        task_sessions.task_rename(task=task, title=payload.title)
    if payload.archived is True:
        task_sessions.task_archive(task=task)
    elif payload.archived is False:
        task_sessions.task_unarchive(task=task)
    if payload.status is not None:
        task_sessions.task_status_set(task=task, status=payload.status)
    # The services above keep ``task`` in step with its row.
    return _task_out(task, project=task_projects(task_ids=[task.pk]).get(task.pk))


@api.post(
    "/v1/sessions",
    response={201: SessionOut, **AUTH, **FIELDS, **JSON_BODY, **MISSING, **LIMITED},
)
def sessions_create(request: TokenRequest, payload: SessionIn) -> Status:
    target = ProviderTarget.objects.filter(pk=payload.target).first()
    if target is None:
        raise UnknownReference("target", "no such target")
    task = None
    if payload.task is not None:
        task = selectors.task_for_user(user=request.auth, task_id=payload.task)
        if task is None:
            raise UnknownReference("task", "no such task")
    session = services.session_create(
        owner=request.auth, target=target, title=payload.title, task=task
    )
    return Status(201, _session_out(session))


@api.get("/v1/sessions/{session_id}", response={200: SessionDetail, **AUTH, **FIELDS, **MISSING})
def sessions_detail(request: TokenRequest, session_id: int) -> dict:
    session = selectors.session_for_user(user=request.auth, session_id=session_id)
    return selectors.session_snapshot(session=session)


@api.post(
    "/v1/sessions/{session_id}/prompts",
    response={202: PromptOut, **AUTH, **FIELDS, **JSON_BODY, **MISSING, **CONFLICT, **LIMITED},
)
def sessions_prompt(request: TokenRequest, session_id: int, payload: PromptIn) -> Status:
    session = selectors.session_for_user(user=request.auth, session_id=session_id)
    generation = services.prompt_submit(session=session, user=request.auth, text=payload.text)
    return Status(202, {"generation": generation.number})


@api.post("/v1/sessions/{session_id}/stop", response={200: StopOut, **AUTH, **FIELDS, **MISSING})
def sessions_stop(request: TokenRequest, session_id: int) -> dict:
    session = selectors.session_for_user(user=request.auth, session_id=session_id)
    generation = services.session_stop(session=session, user=request.auth)
    if generation is None:
        return {"generation": None, "state": None}
    return {"generation": generation.number, "state": generation.state}


@api.post(
    "/v1/sessions/{session_id}/approvals/{approval_id}/decide",
    response={200: ApprovalOut, **AUTH, **FIELDS, **JSON_BODY, **MISSING, **CONFLICT},
)
def sessions_approval_decide(
    request: TokenRequest, session_id: int, approval_id: int, payload: ApprovalDecideIn
) -> dict:
    """Answer an agent's permission request with one of its options; the first answer wins."""
    session = selectors.session_for_user(user=request.auth, session_id=session_id)
    approval = approval_decide(
        approval_id=approval_id,
        user=request.auth,
        option_id=payload.option_id,
        session_id=session.pk,
    )
    return {
        "id": approval.pk,
        "state": approval.state,
        "option_id": approval.option_id,
        "decided_by": request.auth.username,
    }


@api.get(
    "/v1/sessions/{session_id}/events",
    response={200: list[EventOut], **AUTH, **FIELDS, **MISSING},
)
def sessions_events(request: TokenRequest, session_id: int, after: int = 0) -> list[dict]:
    session = selectors.session_for_user(user=request.auth, session_id=session_id)
    return selectors.events_after(session=session, after_seq=max(after, 0), limit=EVENTS_PAGE_LIMIT)


@api.post(
    "/v1/sessions/{session_id}/cancel-retry", response={200: CancelRetryOut, **AUTH, **FIELDS}
)
def sessions_cancel_retry(request: TokenRequest, session_id: int) -> dict:
    # Deliberately no 404: a foreign or unknown session answers exactly like one without a loop.
    actions = prompts.retry_cancel(session_id=session_id, user=request.auth)
    return {"recovery_actions": actions}


@api.post(
    "/v1/sessions/{session_id}/recover",
    response={202: PromptOut, **AUTH, **FIELDS, **JSON_BODY, **MISSING, **CONFLICT, **LIMITED},
)
def sessions_recover(request: TokenRequest, session_id: int, payload: RecoverIn) -> Status:
    """Resume or Start fresh after a failure; ``restore`` puts the workspace back first."""
    session = selectors.session_for_user(user=request.auth, session_id=session_id)
    generation = prompts.session_recover(
        session=session, user=request.auth, action=payload.action, restore=payload.restore
    )
    return Status(202, {"generation": generation.number})


@api.post(
    "/v1/sessions/{session_id}/regenerate",
    response={202: PromptOut, **AUTH, **FIELDS, **MISSING, **CONFLICT, **LIMITED},
)
def sessions_regenerate(request: TokenRequest, session_id: int) -> Status:
    """Answer the last prompt again; the earlier answer is kept, labelled replaced."""
    session = selectors.session_for_user(user=request.auth, session_id=session_id)
    generation = prompts.answer_regenerate(session=session, user=request.auth)
    return Status(202, {"generation": generation.number})


@api.post(
    "/v1/sessions/{session_id}/edit",
    response={202: PromptOut, **AUTH, **FIELDS, **JSON_BODY, **MISSING, **CONFLICT, **LIMITED},
)
def sessions_edit(request: TokenRequest, session_id: int, payload: PromptIn) -> Status:
    """Send an edited version of the last prompt; the earlier one and its answer are kept,
    labelled replaced."""
    session = selectors.session_for_user(user=request.auth, session_id=session_id)
    generation = prompts.prompt_edit(session=session, user=request.auth, text=payload.text)
    return Status(202, {"generation": generation.number})


@api.patch(
    "/v1/sessions/{session_id}",
    response={200: SessionOut, **AUTH, **FIELDS, **JSON_BODY, **MISSING},
)
def sessions_update(request: TokenRequest, session_id: int, payload: SessionPatchIn) -> dict:
    session = selectors.session_for_user(user=request.auth, session_id=session_id)
    target = ProviderTarget.objects.filter(pk=payload.target).first()
    if target is None:
        raise UnknownReference("target", "no such target")
    session = targets.session_target_set(session=session, user=request.auth, target=target)
    return _session_out(session)


@api.get("/v1/tokens", response={200: list[ApiTokenOut], **AUTH})
def tokens_list(request: TokenRequest) -> list[dict]:
    """The caller's own tokens that are not revoked: never the token itself, only its prefix."""
    return [
        {
            "id": t.pk,
            "prefix": t.prefix,
            "label": t.label,
            "created": t.created_at,
            "last_used": t.last_used_at,
            "expires": t.expires_at,
        }
        for t in selectors.api_tokens_for_user(user=request.auth)
    ]


@api.delete("/v1/tokens/{token_id}", response={204: None, **AUTH, **FIELDS, **MISSING})
def tokens_revoke(request: TokenRequest, token_id: int) -> Status:
    api_token_revoke(user=request.auth, token_id=token_id)
    return Status(204, None)
