"""Coalesce streamed deltas into transcript rows: a few writes per second, never one per token.

The first delta of a message creates its row (an INSERT carrying that text), so the viewer sees
the answer begin at once. Later deltas are buffered and flushed when ``flush_interval_s`` has
passed since the last write: one INSERT of the new text (a chunk row, see
``services.messages.message_append``) and one ``message.appended`` event per flush, so a flush
costs what it adds, however long the answer already is. Closing folds the chunks and what is
still buffered into the final ``message.updated`` write. So a message streamed for T seconds
costs at most T / flush_interval_s + 1 writes.

Every delta passes through a credential-tier ``StreamRedactor`` first (one per message, so a
secret split across deltas is still removed); the text it still holds (a possible start of a
secret) is written when the message closes.

The streams of one box share a budget of flushes per second (``KANDEV_STREAM_FLUSHES_PER_S``,
100), split evenly over its ``KANDEV_WORKER_PROCESSES`` worker processes: while more messages
stream at once in a process than its share times the interval, every writer's interval stretches
to streams / share. Ten streams flush every 0.1 s as usual; 200 at once flush every 2 s each, so
the box's writes and pushes (and the frames Daphne sends) stay bounded however many answers
stream, instead of every stream, and every new prompt, falling behind together (bench_scale
and its history in benchmarks/README.md show what each budget cost).

Trade-off: a buffered tail waits for the next delta (or the close) to be written; with the
default 0.1 s interval that is invisible in practice, and it keeps every write on the worker's
own thread, which is what makes the ordering of events simple.
"""

from __future__ import annotations

import threading
from typing import Protocol

from recovery.redact import StreamRedactor
from sessions_app.models import Message, PromptGeneration, Session
from sessions_app.services import message_append, message_create, message_finish


class MonotonicClock(Protocol):
    def monotonic(self) -> float: ...


class OpenStreams:
    """How many messages of this process are streaming now (shared by its turn threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    @property
    def count(self) -> int:
        return self._count

    def opened(self) -> None:
        with self._lock:
            self._count += 1

    def closed(self) -> None:
        with self._lock:
            self._count = max(0, self._count - 1)


OPEN_STREAMS = OpenStreams()


class StreamWriter:
    def __init__(
        self,
        *,
        session: Session,
        generation: PromptGeneration,
        flush_interval_s: float,
        clock: MonotonicClock,
        flushes_per_s: float = 0.0,
        streams: OpenStreams = OPEN_STREAMS,
    ) -> None:
        """``flushes_per_s``: the process's budget shared with every other open stream (0: no
        budget, always ``flush_interval_s``)."""
        self._session = session
        self._generation = generation
        self._interval = flush_interval_s
        self._flushes_per_s = flushes_per_s
        self._streams = streams
        self._counted = False  # this writer's open message is in ``streams``
        self._clock = clock
        self._message: Message | None = None
        self._pending = ""
        self._last_write = 0.0
        self._redactor = StreamRedactor()
        self._role = ""  # of the open message, or of the text the redactor holds

    @property
    def open_message(self) -> Message | None:
        return self._message

    @property
    def flushes_per_s(self) -> float:
        """This process's share of the flush budget (0: none)."""
        return self._flushes_per_s

    @property
    def interval_s(self) -> float:
        """The interval between flushes now: the base one, or the shared budget's share."""
        if self._flushes_per_s <= 0:
            return self._interval
        return max(self._interval, self._streams.count / self._flushes_per_s)

    def delta(self, *, role: str, text: str) -> None:
        if not text:
            return
        if self._role and self._role != role:
            self.close()
        self._role = role
        text = self._redactor.feed(text)
        if not text:
            return
        now = self._clock.monotonic()
        if self._message is None:
            self._message = message_create(
                session=self._session,
                generation=self._generation,
                role=role,
                text=text,
                status=Message.Status.STREAMING,
            )
            self._count_open()
            self._last_write = now
            return
        self._pending += text
        if now - self._last_write >= self.interval_s:
            self.flush(now=now)

    def _count_open(self) -> None:
        if not self._counted:
            self._counted = True
            self._streams.opened()

    def flush(self, *, now: float | None = None) -> None:
        if self._message is None or not self._pending:
            return
        message_append(message=self._message, text=self._pending)
        self._pending = ""
        self._last_write = self._clock.monotonic() if now is None else now

    def close(self, *, status: str = Message.Status.COMPLETE, incomplete: bool = False) -> None:
        """Finish the open message, if any, in one write. Safe to call when nothing is open."""
        held = self._redactor.finish()
        if self._message is None:
            if held:  # the whole message was one held word: it still makes a row
                self._message = message_create(
                    session=self._session,
                    generation=self._generation,
                    role=self._role,
                    text=held,
                    status=Message.Status.STREAMING,
                )
            else:
                self._role = ""
                return
        else:
            self._pending += held
        try:
            message_finish(
                message=self._message, status=status, incomplete=incomplete, tail=self._pending
            )
        finally:
            if self._counted:
                self._counted = False
                self._streams.closed()
        self._pending = ""
        self._message = None
        self._role = ""
