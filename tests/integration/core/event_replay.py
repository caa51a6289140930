"""Apply durable session events to a snapshot, the way a viewer's page does.

Tests use it the way Zulip tests its event system: take a stale snapshot, apply every event
after it, and compare with a fresh snapshot. Any event the writers forget to log (or log with
the wrong payload) shows up as a difference.
"""

from __future__ import annotations

import copy
from typing import Any


class ReplayMismatch(AssertionError):
    pass


def snapshot_apply(snapshot: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, Any]:
    state = copy.deepcopy(snapshot)
    messages = {m["id"]: m for m in state["messages"]}
    for event in events:
        if event["seq"] != state["last_seq"] + 1:
            raise ReplayMismatch(f"seq {event['seq']} follows {state['last_seq']}")
        _apply(state, messages, event["event"], event["payload"])
        state["last_seq"] = event["seq"]
    state["messages"] = [messages[key] for key in sorted(messages)]
    return state


def _apply(state: dict, messages: dict, kind: str, payload: dict) -> None:
    if kind in ("message.created", "message.updated"):
        messages[payload["message"]["id"]] = copy.deepcopy(payload["message"])
    elif kind == "message.appended":
        message = messages[payload["id"]]
        have, offset, text = len(message["text"]), payload["offset"], payload["text"]
        if offset == have:
            message["text"] += text
        elif offset + len(text) > have:  # a gap or an overlap: the log is inconsistent
            raise ReplayMismatch(f"append at {offset} to a message of {have} characters")
    elif kind == "message.deleted":
        for message_id in payload["ids"]:
            messages.pop(message_id, None)
    elif kind == "session.updated":
        state["state"] = payload["state"]
        state["recovery_actions"] = list(payload.get("recovery_actions", []))
        state["explanation"] = payload.get("explanation", "")
        # The place in line rides on the state: a state without it is not queued.
        state["queue"] = copy.deepcopy(payload.get("queue"))
    elif kind == "notice.upserted":
        state["notice"] = copy.deepcopy(payload["notice"])
    elif kind == "notice.deleted":
        if state["notice"] is not None and state["notice"]["id"] in payload["ids"]:
            state["notice"] = None
    elif kind != "generation.updated":  # generations are not part of what a viewer shows
        raise ReplayMismatch(f"unknown event {kind!r}")
