"""Coalesce streamed deltas into transcript rows: a few writes per second, never one per token.

The first delta of a message creates its row (an INSERT carrying that text), so the viewer sees
the answer begin at once. Later deltas are buffered and flushed when ``flush_interval_s`` has
passed since the last write: one UPDATE of the row and one ``message.appended`` event per flush.
Closing folds what is still buffered into the final ``message.updated`` write. So a message
streamed for T seconds costs at most T / flush_interval_s + 1 UPDATEs.

Trade-off: a buffered tail waits for the next delta (or the close) to be written; with the
default 0.1 s interval that is invisible in practice, and it keeps every write on the worker's
own thread, which is what makes the ordering of events simple.
"""

from __future__ import annotations

from typing import Protocol

from sessions_app.models import Message, PromptGeneration, Session
from sessions_app.services import message_append, message_create, message_finish


class MonotonicClock(Protocol):
    def monotonic(self) -> float: ...


class StreamWriter:
    def __init__(
        self,
        *,
        session: Session,
        generation: PromptGeneration,
        flush_interval_s: float,
        clock: MonotonicClock,
    ) -> None:
        self._session = session
        self._generation = generation
        self._interval = flush_interval_s
        self._clock = clock
        self._message: Message | None = None
        self._pending = ""
        self._last_write = 0.0

    @property
    def open_message(self) -> Message | None:
        return self._message

    def delta(self, *, role: str, text: str) -> None:
        if not text:
            return
        if self._message is not None and self._message.role != role:
            self.close()
        now = self._clock.monotonic()
        if self._message is None:
            self._message = message_create(
                session=self._session,
                generation=self._generation,
                role=role,
                text=text,
                status=Message.Status.STREAMING,
            )
            self._last_write = now
            return
        self._pending += text
        if now - self._last_write >= self._interval:
            self.flush(now=now)

    def flush(self, *, now: float | None = None) -> None:
        if self._message is None or not self._pending:
            return
        message_append(message=self._message, text=self._pending)
        self._pending = ""
        self._last_write = self._clock.monotonic() if now is None else now

    def close(self, *, status: str = Message.Status.COMPLETE, incomplete: bool = False) -> None:
        """Finish the open message, if any, in one write. Safe to call when nothing is open."""
        if self._message is None:
            return
        self._message.text += self._pending
        self._pending = ""
        message_finish(message=self._message, status=status, incomplete=incomplete)
        self._message = None
