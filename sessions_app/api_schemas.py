"""Request and response shapes of the JSON API (they make the OpenAPI document)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Schema
from pydantic import Field


class TargetOut(Schema):
    """A target as a user sees it; how it is set up (command, URL, key variable) is the
    operator's and never leaves the server."""

    id: int
    name: str
    kind: str
    model: str
    fallbacks: list[int]


class TaskIn(Schema):
    title: str = Field(min_length=1, max_length=200)


class TaskOut(Schema):
    id: int
    title: str
    status: str
    created: datetime
    sessions: list[int]


class SessionIn(Schema):
    target: int
    title: str = Field(min_length=1, max_length=200)
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
    reason: str  # "" a free worker, "user_limit" the sender's running prompts, "agent_slot"
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


class PromptIn(Schema):
    text: str


class PromptOut(Schema):
    generation: int


class StopOut(Schema):
    generation: int | None
    state: str | None


class CancelRetryOut(Schema):
    recovery_actions: list[str]


class RecoverIn(Schema):
    action: Literal["resume", "fresh"]


class SessionPatchIn(Schema):
    target: int


class EventOut(Schema):
    seq: int
    event: str
    payload: dict[str, Any]


class ErrorOut(Schema):
    detail: Any
