"""The worker's side of asking a person: an agent's permission request becomes a pending approval
that every viewer sees, and the turn waits for the first answer.

``ApprovalAsker`` is the ``PermissionAsker`` an ACP prompt run awaits
(recovery/providers/acp/asking.py). It runs on the prompt's own event loop, so every database
step goes to one thread of its own and lends its connection back afterwards: a wait can last as
long as KANDEV_APPROVAL_TIMEOUT, and holding a connection all that time would starve the pool.
The answer is read from the row every ``poll_s``: the row is the truth (a decision made on any
web process, the timeout), so no message can be missed. When the wait is cancelled (Stop, the
prompt ended under it) the row is settled as cancelled before the cancellation goes on.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

from django.db import connection

from recovery.clock import Clock
from recovery.providers.acp.asking import PermissionAsk
from sessions_app.approvals.services import (
    approval_answer,
    approval_cancel,
    approval_request,
    approval_resume,
)
from sessions_app.db_connections import connection_release
from sessions_app.models import PromptGeneration

POLL_S = 0.25


class ApprovalAsker:
    """One turn's asker; ``close()`` once the turn's prompt has ended."""

    def __init__(self, *, generation_id: int, clock: Clock, poll_s: float = POLL_S) -> None:
        self._generation_id = generation_id
        self._clock = clock
        self._poll_s = poll_s
        self._executor: ThreadPoolExecutor | None = None

    async def __call__(self, ask: PermissionAsk) -> str | None:
        # Its own copy of the row: the turn's thread holds the other one.
        generation = await self._db(
            lambda: PromptGeneration.objects.select_related("session").get(pk=self._generation_id)
        )
        approval = await self._db(
            lambda: approval_request(
                generation=generation,
                tool_call_id=ask.tool_call_id,
                kind=ask.kind or "",
                title=ask.title,
                command=ask.command or "",
                paths=ask.paths,
                diff=asdict(ask.diff) if ask.diff is not None else None,
                options=[asdict(option) for option in ask.options],
                now=self._now(),
            )
        )
        try:
            while (
                answer := await self._db(
                    lambda: approval_answer(approval_id=approval.pk, now=self._now())
                )
            ) is None:
                await asyncio.sleep(self._poll_s)
        except asyncio.CancelledError:
            await self._db(lambda: approval_cancel(approval_id=approval.pk))
            raise
        await self._db(lambda: approval_resume(generation=generation))
        return answer.option_id or None

    def close(self) -> None:
        if self._executor is not None:
            # The executor thread's own connection (``connection`` is per thread).
            self._executor.submit(lambda: connection.close()).result()
            self._executor.shutdown()
            self._executor = None

    def _now(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self._clock.now(), tz=dt.UTC)

    async def _db[T](self, step: Callable[[], T]) -> T:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix=f"approvals-{self._generation_id}"
            )

        def run() -> T:
            try:
                return step()
            finally:
                connection_release()

        return await asyncio.get_running_loop().run_in_executor(self._executor, run)
