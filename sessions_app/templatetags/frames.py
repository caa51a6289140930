"""Websocket frames from server to browser: HTML fragments that htmx's ws extension applies as
out-of-band swaps by element id.

Every frame starts with one header element, so the browser can judge a frame before applying it:

  <span id="ws-seq" data-kind="snapshot|events" data-from="A" data-seq="B" hx-swap-oob="true" hidden>

``data-seq`` is the last session event seq the frame brings the page to; swapping the header in
keeps the page's resume point (``#ws-seq[data-seq]``) current. Error frames carry
``<div id="ws-error" data-kind="error" data-code=...>`` instead and leave the seq alone.

Appends: ``message.appended`` becomes ``<span hx-swap-oob="beforeend:#msg-N-text"
data-offset=.. data-end=..>``. The browser (static/js/live.js) applies it only when the offset
equals the length it holds for that message (kept in ``data-len``, counted in code points like the
server), so replaying an append never duplicates text, and a gap asks for a fresh snapshot.

This module is pure rendering (no database): consumers call it in the event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.template.loader import render_to_string
from django.utils.html import format_html, format_html_join

from sessions_app import events as ev

KIND_SNAPSHOT = "snapshot"
KIND_EVENTS = "events"

_HEADER = (
    '<span id="ws-seq" data-kind="{}" data-from="{}" data-seq="{}" hx-swap-oob="true" hidden>'
    "</span>"
)


def frame_header(*, kind: str, first_seq: int, last_seq: int) -> str:
    return format_html(_HEADER, kind, first_seq, last_seq)


def snapshot_frame(*, snapshot: dict[str, Any]) -> str:
    """The whole live part of the session page, consistent with ``snapshot["last_seq"]``."""
    body = render_to_string(
        "sessions_app/partials/live_regions.html", {"snapshot": snapshot, "oob": True}
    )
    last_seq = snapshot["last_seq"]
    return frame_header(kind=KIND_SNAPSHOT, first_seq=0, last_seq=last_seq) + body


def events_frame(*, session_id: int, events: Sequence[dict[str, Any]]) -> str:
    """One frame for a run of consecutive events ({"seq", "event", "payload"} dicts)."""
    header = frame_header(kind=KIND_EVENTS, first_seq=events[0]["seq"], last_seq=events[-1]["seq"])
    return header + "".join(
        event_html(session_id=session_id, event=e["event"], payload=e["payload"]) for e in events
    )


def error_frame(*, code: str, message: str) -> str:
    return format_html(
        '<div id="ws-error" data-kind="error" data-code="{}" hx-swap-oob="true" hidden>{}</div>',
        code,
        message,
    )


def event_html(*, session_id: int, event: str, payload: dict[str, Any]) -> str:
    render = _RENDERERS.get(event)
    # Unknown or purely bookkeeping events still advance the seq (the header does that).
    return render(session_id, payload) if render else ""


def _message_created(session_id: int, payload: dict[str, Any]) -> str:
    message = payload["message"]
    row = render_to_string("sessions_app/partials/message.html", {"m": message})
    return format_html(
        '<div hx-swap-oob="beforeend:#transcript" data-created="msg-{}">{}</div>',
        message["id"],
        row,
    )


def _message_appended(session_id: int, payload: dict[str, Any]) -> str:
    # The hot path while streaming (one per flush per viewer): plain format_html, no template.
    offset = int(payload["offset"])
    text = payload["text"]
    return format_html(
        '<span hx-swap-oob="beforeend:#msg-{}-text" data-offset="{}" data-end="{}">{}</span>',
        int(payload["id"]),
        offset,
        offset + len(text),
        text,
    )


def _message_updated(session_id: int, payload: dict[str, Any]) -> str:
    return render_to_string(
        "sessions_app/partials/message.html", {"m": payload["message"], "oob": True}
    )


def _message_deleted(session_id: int, payload: dict[str, Any]) -> str:
    return format_html_join(
        "", '<div id="msg-{}" hx-swap-oob="delete"></div>', ((int(i),) for i in payload["ids"])
    )


def _session_updated(session_id: int, payload: dict[str, Any]) -> str:
    context = {
        "session_id": session_id,
        "state": payload["state"],
        "recovery_actions": payload.get("recovery_actions", []),
        "oob": True,
    }
    return render_to_string("sessions_app/partials/session_state.html", context)


def _notice_upserted(session_id: int, payload: dict[str, Any]) -> str:
    return render_to_string(
        "sessions_app/partials/notice.html", {"notice": payload.get("notice"), "oob": True}
    )


def _notice_deleted(session_id: int, payload: dict[str, Any]) -> str:
    return render_to_string("sessions_app/partials/notice.html", {"notice": None, "oob": True})


_RENDERERS: dict[str, Callable[[int, dict[str, Any]], str]] = {
    ev.MESSAGE_CREATED: _message_created,
    ev.MESSAGE_APPENDED: _message_appended,
    ev.MESSAGE_UPDATED: _message_updated,
    ev.MESSAGE_DELETED: _message_deleted,
    ev.SESSION_UPDATED: _session_updated,
    ev.NOTICE_UPSERTED: _notice_upserted,
    ev.NOTICE_DELETED: _notice_deleted,
}
