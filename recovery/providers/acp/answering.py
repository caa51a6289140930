"""Answering one permission request an ACP agent sends: by the target's policy, or by a person
where the ASK policy puts it to one (asking.py), and the AgentPermission event that records the
answer. Apart from run.py, which owns the process and the conversation and only emits the event.
"""

from __future__ import annotations

import asyncio

from acp.schema import PermissionOption, ToolCallUpdate

from recovery.providers.acp.agent_events import AgentPermission
from recovery.providers.acp.asking import DIFF_TEXT_CHARS, PermissionAsker, ask_await, ask_from
from recovery.providers.acp.deadline import PausableDeadline
from recovery.providers.acp.permissions import (
    PermissionPolicy,
    ToolRequest,
    permission_asks_person,
    permission_choose,
    request_paths,
)
from recovery.providers.acp.spec import AcpPromptSpec

_GRANTING = ("allow_once", "allow_always")


async def permission_answer(
    *,
    tool_call: ToolCallUpdate,
    options: list[PermissionOption],
    kind: str | None,
    spec: AcpPromptSpec,
    asker: PermissionAsker | None,
    stop: asyncio.Event,
    deadline: PausableDeadline,
) -> tuple[str | None, AgentPermission]:
    """The option chosen (None: cancelled) and the event saying so. ``kind`` is the tool's kind
    as the request or the stream named it; without ``asker`` a request the ASK policy would put
    to a person is answered as under read-only."""
    paths = request_paths(
        locations=[location.path for location in tool_call.locations or ()],
        raw_input=tool_call.raw_input,
    )
    request = ToolRequest(kind=kind, paths=paths)
    workspace = spec.workspace
    policy = spec.permission_policy
    if asker is not None and permission_asks_person(
        policy=policy, request=request, workspace=workspace
    ):
        ask = ask_from(
            tool_call=tool_call,
            options=options,
            kind=kind,
            paths=paths,
            read_current=lambda path: workspace.current_text(path, limit=DIFF_TEXT_CHARS),
        )
        option_id = await ask_await(answer=asker(ask), stop=stop, deadline=deadline)
        offered = {option.option_id: str(option.kind) for option in options}
        option_kind = offered.get(option_id) if option_id is not None else None
        if option_kind is None:
            option_id = None  # not one the agent offered: answered as cancelled
        granted, asked = option_kind in _GRANTING, True
    else:
        choice = permission_choose(
            policy=PermissionPolicy.ALLOW_READ_ONLY if policy is PermissionPolicy.ASK else policy,
            request=request,
            workspace=workspace,
            options=[(option.option_id, option.kind) for option in options],
        )
        option_id, option_kind, granted, asked = (
            choice.option_id,
            choice.option_kind,
            choice.granted,
            False,
        )
    permission = AgentPermission(
        tool_call_id=tool_call.tool_call_id,
        granted=granted,
        option_kind=option_kind,
        tool_kind=kind,
        asked=asked,
    )
    return option_id, permission
