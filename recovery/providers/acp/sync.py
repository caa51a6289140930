"""A blocking iterator over one ACP prompt, for Celery workers (which must not run the ORM
inside an event loop). The prompt runs on its own event loop in a helper thread; events arrive
in order and the outcome is always the last item.

    for item in acp_prompt_iter(spec, cancel=token):
        if isinstance(item, (PromptCompleted, PromptFailure)):
            ...  # the outcome, always last
        else:
            ...  # an AgentEvent: persist, push
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from recovery.cancel import CancelToken
from recovery.providers.acp.agent_events import AgentEvent
from recovery.providers.acp.asking import PermissionAsker
from recovery.providers.acp.failure import PromptCompleted, PromptFailure, PromptOutcome
from recovery.providers.acp.run import AcpPromptRun
from recovery.providers.acp.spec import AcpPromptSpec

_JOIN_S = 30.0


@dataclass(frozen=True, slots=True)
class _Crashed:
    error: BaseException


def acp_prompt_iter(
    spec: AcpPromptSpec, *, cancel: CancelToken | None = None, asker: PermissionAsker | None = None
) -> Iterator[AgentEvent | PromptOutcome]:
    items: queue.SimpleQueue[AgentEvent | PromptOutcome | _Crashed] = queue.SimpleQueue()
    # Our own token, fed by the caller's: leaving the loop early stops the agent without
    # cancelling whatever else the caller's token guards.
    token = CancelToken()
    unsubscribe = cancel.on_cancel(token.cancel) if cancel is not None else (lambda: None)

    def work() -> None:
        try:
            outcome = asyncio.run(
                AcpPromptRun(spec=spec, on_event=items.put, cancel=token, asker=asker).execute()
            )
        except BaseException as error:  # noqa: BLE001 -- re-raised in the consumer's thread
            items.put(_Crashed(error))
            return
        items.put(outcome)

    thread = threading.Thread(
        target=work, name=f"acp-prompt-{spec.correlation.generation}", daemon=True
    )
    thread.start()
    try:
        while True:
            item = items.get()
            if isinstance(item, _Crashed):
                raise item.error
            yield item
            if isinstance(item, (PromptCompleted, PromptFailure)):
                return
    finally:
        unsubscribe()
        if thread.is_alive():
            token.cancel()
        thread.join(_JOIN_S)
