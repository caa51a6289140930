"""Request and response shapes of the JSON API (they make the OpenAPI document)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal

from django.conf import settings
from ninja import Schema
from pydantic import BeforeValidator, ConfigDict, Field, StrictBool, model_validator
from pydantic_core import PydanticCustomError

from sessions_app import text_rules


def _refusing(problem: Callable[[str], str | None], *, pattern: str, description: str) -> Any:
    """A str field checked by a text rule before pydantic's own checks, so the 422 names the
    field with the rule's words; its pattern puts the same rule in the OpenAPI document."""

    def check(value: object) -> object:
        if isinstance(value, str):
            message = problem(value)
            if message is not None:
                raise PydanticCustomError("text_refused", message)
        return value

    return (
        BeforeValidator(check),
        Field(description=description, json_schema_extra={"pattern": pattern}),
    )


Name = Annotated[
    str,
    *_refusing(
        text_rules.name_problem,
        pattern=text_rules.NAME_PATTERN,
        description="One line, not blank; no control, bidirectional-override or lone surrogate"
        " characters.",
    ),
]
PromptText = Annotated[
    str,
    *_refusing(
        text_rules.text_problem,
        pattern=text_rules.TEXT_PATTERN,
        description="Not blank; no NUL and no lone surrogate characters.",
    ),
]


class BodyIn(Schema):
    """A request body: a JSON object, nothing else. It replaces ninja's root validator, which
    reads fields off any value as attributes (meant for ORM objects): a body of "AAA" made a task
    titled "Aaa", from str.title. A field the schema does not name is refused (422 naming it)
    rather than ignored: a client that sends one expects it to do something."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="wrap")
    @classmethod
    def _run_root_validator(cls, values: Any, handler: Any, info: Any) -> Any:
        if not isinstance(values, dict):
            raise PydanticCustomError("model_type", "Input should be a JSON object")
        return handler(values)


class TargetOut(Schema):
    """A target as a user sees it; how it is set up (command, URL, key variable) is the
    operator's and never leaves the server."""

    id: int
    name: str
    model: str
    # Who answers an agent's requests to use a tool: "ask" puts edits and commands to a person
    # (see POST /v1/sessions/{id}/approvals/{aid}/decide).
    permission_policy: str


class TaskIn(BodyIn):
    title: Name = Field(min_length=1, max_length=200)
    # A project the caller may use (404 alike for an unknown and a forbidden one); absent: the
    # task's agents work in an empty folder of their own.
    project: int | None = Field(default=None, ge=1, le=2**63 - 1)


class TaskOut(Schema):
    id: int
    project: int | None  # the project its agents work in (a worktree of theirs); None: unbound
    title: str
    status: str
    archived: bool
    created: datetime
    sessions: list[int]


class TaskPatchIn(BodyIn):
    """Rename (``title``), archive or bring back (``archived``), mark done or reopen
    (``status``); absent fields stay."""

    title: Name | None = Field(default=None, min_length=1, max_length=200)
    # Strict: pydantic would take 0 and 1 (or "yes") for a boolean the schema says is one.
    archived: StrictBool | None = None
    # Only Done is the person's to set; "open" takes a task out of Done, back to what its
    # sessions say (the other statuses are projected from them).
    status: Literal["done", "open"] | None = Field(
        default=None,
        description='"done" marks the task done; "open" reopens it (its status then follows its'
        " sessions again).",
    )


class SessionIn(BodyIn):
    target: int
    title: Name = Field(min_length=1, max_length=200)
    task: int | None = None


class SessionOut(Schema):
    id: int
    task: int
    target: int
    title: str
    state: str


class MessageOut(Schema):
    id: int
    role: str
    text: str
    status: str
    incomplete: bool
    generation: int | None
    metadata: dict[str, Any]
    created: str


class TargetRef(Schema):
    id: int
    name: str
    kind: str


class NoticeOut(Schema):
    id: int
    reason: str
    code: str
    provider: str
    model: str
    attempt: int
    max_attempts: int
    retry_at: str
    retry_at_ms: int
    switched_target: str


class QueueOut(Schema):
    ahead: int  # queued prompts in line before this one
    reason: str  # "" a free worker, "user_limit" the sender's running prompts, "agent_slot",
    # "workspace" the other session of the same task
    generation: int


class SessionDetail(Schema):
    id: int
    title: str
    state: str
    target: TargetRef
    messages: list[MessageOut]
    notice: NoticeOut | None
    recovery_actions: list[str]
    explanation: str  # why the session needs attention (redacted); empty otherwise
    queue: QueueOut | None  # while the prompt is queued: its place in line
    last_seq: int


class PromptIn(BodyIn):
    text: PromptText = Field(min_length=1, max_length=settings.KANDEV_MAX_PROMPT_CHARS)


class PromptOut(Schema):
    generation: int


class StopOut(Schema):
    generation: int | None
    state: str | None


class ApprovalDecideIn(BodyIn):
    option_id: str = Field(min_length=1, max_length=200, description="One the agent offered.")


class ApprovalOut(Schema):
    id: int
    state: str
    option_id: str
    decided_by: str


class CancelRetryOut(Schema):
    recovery_actions: list[str]


class RecoverIn(BodyIn):
    action: Literal["resume", "fresh"]
    restore: StrictBool = Field(
        default=False,
        description=(
            "Start fresh only: first put the agent's workspace back exactly as the failed turn "
            "found it (new files removed, changed ones restored, deleted ones brought back). "
            "Answers 409 when the turn's starting state is unknown or the workspace is gone, or "
            "with action resume. Without it the files are kept."
        ),
    )


class SessionPatchIn(BodyIn):
    target: int


class EventOut(Schema):
    seq: int
    event: str
    payload: dict[str, Any]


class ApiTokenOut(Schema):
    id: int
    prefix: str = Field(description="The token's first characters, to tell tokens apart")
    label: str
    created: datetime
    last_used: datetime | None
    expires: datetime | None = Field(description="Refused from then on; null: never expires")


class ErrorOut(Schema):
    detail: str


class CapReachedOut(Schema):
    """A 429: the caller reached one of their per-person caps; the Retry-After header says the
    same wait in whole seconds."""

    detail: str = Field(description="The sentence a person reads: which cap, and when to retry")
    cap: Literal["session_rate", "prompt_rate", "queued_prompts"]
    limit: int = Field(description="The cap's setting (per minute, or prompts waiting at once)")
    retry_after: int = Field(description="Seconds until trying again may succeed")


class FieldErrorOut(Schema):
    type: str
    loc: list[str | int] = Field(
        description='Where: ["body", ..., "title"], ["path", "session_id"]'
    )
    msg: str


class ValidationErrorOut(Schema):
    detail: list[FieldErrorOut]
