"""The SDK's client side of one prompt run: it answers the agent's permission requests.

``session/update`` frames are not handled here: the run converts them from raw frames with an
observer the SDK calls in wire order (``run.py``), so this handler is deliberately empty. A
permission request is answered by the run (it knows the policy, the workspace and the tool kinds
seen so far); this module only turns the chosen option into the protocol's response.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

# (tool_call, options) -> the chosen option's id, or None to refuse; awaited, since under the ASK
# policy a person answers (the SDK keeps reading the agent's frames meanwhile).
PermissionAnswer = Callable[[ToolCallUpdate, list[PermissionOption]], Awaitable[str | None]]


class KandevClient:
    def __init__(self, answer: PermissionAnswer) -> None:
        self._answer = answer

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        option_id = await self._answer(tool_call, options)
        if option_id is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(option_id=option_id, outcome="selected")
        )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        return None
