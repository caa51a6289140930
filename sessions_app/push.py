"""Push a persisted session event to the session's channel group.

Pushing is a hint to live viewers; the database is the truth. A push that fails is logged and
dropped: a viewer that missed it catches up from Postgres by seq on its next resume.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from sessions_app.events import board_group_name, group_name

logger = logging.getLogger(__name__)

# An unreachable Redis must not stall the worker's stream for its reconnect attempts: a push
# that can't be delivered quickly is dropped, and viewers catch up from the log.
PUSH_TIMEOUT_S = 0.5


def group_message(*, seq: int, event: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"type": "session.event", "seq": seq, "event": event, "payload": payload}


def event_push(*, session_id: int, seq: int, event: str, payload: dict[str, Any]) -> None:
    try:
        layer = get_channel_layer()
        if layer is None:
            return
        async_to_sync(_send)(
            layer, group_name(session_id), group_message(seq=seq, event=event, payload=payload)
        )
    except Exception:
        logger.warning("push of session %s seq %s failed", session_id, seq, exc_info=True)


def board_push(*, owner_id: int) -> None:
    """Tell the owner's open boards to re-read their tasks. A lost hint costs that board only
    freshness until the next one (or a reload): the database is the truth."""
    try:
        layer = get_channel_layer()
        if layer is None:
            return
        async_to_sync(_send)(layer, board_group_name(owner_id), {"type": "board.changed"})
    except Exception:
        logger.warning("board push to user %s failed", owner_id, exc_info=True)


async def _send(layer: Any, group: str, message: dict[str, Any]) -> None:
    await asyncio.wait_for(layer.group_send(group, message), timeout=PUSH_TIMEOUT_S)
