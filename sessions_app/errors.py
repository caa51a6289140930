"""Domain errors raised by services and selectors.

The pages (views.session_action) and the API (api.py's handlers) answer them with the status in
HTTP_STATUS (SessionNotFound -> 404, GenerationActive -> 409, InvalidInput -> 422, its
UnknownReference -> 404 and StateConflict -> 409, CapReached -> 429); services never return
half-done work instead of raising.
"""

from __future__ import annotations

import math


class DomainError(Exception):
    """Base of every error a service raises on purpose."""


class SessionNotFound(DomainError):
    """Unknown *and* foreign sessions alike, so nobody can probe which ids exist."""


class TokenNotFound(DomainError):
    """Unknown, foreign and revoked API tokens alike."""


class GenerationActive(DomainError):
    """A prompt is already queued or running in this session."""


class RetryWaiting(GenerationActive):
    """A failed turn is waiting to retry: a new prompt is refused until the retry is cancelled
    (Stop or the banner's Cancel) or has run, so a pending retry is never dropped silently."""


class CapReached(DomainError):
    """The person reached one of their caps (sessions_app/services/caps.py): ``cap`` names it
    (``session_rate``, ``prompt_rate``, ``queued_prompts``), ``limit`` is its setting and
    ``retry_after_s`` when trying again may succeed. The API answers 429 with Retry-After; pages
    show ``message`` and keep what was typed. Nothing was written."""

    def __init__(self, *, cap: str, limit: int, retry_after_s: float, message: str) -> None:
        super().__init__(message)
        self.cap = cap
        self.limit = limit
        self.retry_after_s = retry_after_s
        self.message = message

    @property
    def retry_after(self) -> int:
        """Whole seconds for the Retry-After header, rounded up and never 0 (a client that
        retried at once would only be refused again)."""
        return max(1, math.ceil(self.retry_after_s))


class InvalidInput(DomainError):
    """A write was refused because a field is wrong. ``field`` names it for 422 responses."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class UnknownReference(InvalidInput):
    """A well-formed field names something that does not exist or is not the caller's (a target
    id, a task id). Pages show it on the field; the API answers 404, since no schema can tell
    which ids exist."""


class StateConflict(InvalidInput):
    """A well-formed request that the current state refuses (a duplicate name, nothing to
    re-run yet). Pages show it on the field; the API answers 409."""


class WorkspaceUnusable(DomainError):
    """A task's worktree cannot be used: its project's repository or the worktree itself is gone
    or broken (sessions_app/workspaces). ``code`` names which for the card; ``detail`` is the
    sentence the person reads."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


class ApprovalNotFound(DomainError):
    """Unknown approvals and those of sessions the caller may not view alike."""


class ApprovalDecided(DomainError):
    """Someone answered first (or it timed out, or the turn was cancelled): first answer wins."""


# The HTTP status each domain error answers, for the API and the pages alike; a subclass not
# listed answers as its nearest listed base.
HTTP_STATUS: dict[type[DomainError], int] = {
    SessionNotFound: 404,
    TokenNotFound: 404,
    GenerationActive: 409,
    CapReached: 429,
    InvalidInput: 422,
    UnknownReference: 404,
    StateConflict: 409,
    WorkspaceUnusable: 409,
    ApprovalNotFound: 404,
    ApprovalDecided: 409,
}


def http_status(error: DomainError, *, on_page: bool = False) -> int:
    """The status ``error`` answers. A page shows every InvalidInput on the field or line the
    person corrects, so there UnknownReference and StateConflict stay 422 (``on_page``); the API
    answers them 404 and 409, since no schema can tell which ids exist or what state refuses."""
    if on_page and isinstance(error, InvalidInput):
        return HTTP_STATUS[InvalidInput]
    for kind in type(error).__mro__:
        if kind in HTTP_STATUS:
            return HTTP_STATUS[kind]
    raise TypeError(f"{type(error).__name__} has no HTTP status in HTTP_STATUS")


def http_headers(error: DomainError) -> dict[str, str]:
    """The headers ``error``'s answer carries, on the API and the pages alike: a cap says when
    to try again."""
    if isinstance(error, CapReached):
        return {"Retry-After": str(error.retry_after)}
    return {}
