"""Domain errors raised by services and selectors.

Views, consumers and the API translate them (SessionNotFound -> 404, GenerationActive -> 409,
InvalidInput -> 422, its UnknownReference -> 404 and StateConflict -> 409, CapReached -> 429);
services never return half-done work instead of raising.
"""

from __future__ import annotations


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
