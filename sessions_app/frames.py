"""Websocket frames from server to browser: HTML fragments that htmx's ws extension applies as
out-of-band swaps by element id.

Every frame starts with one header element, so the browser can judge a frame before applying it:

  <span id="ws-seq" data-kind="snapshot|events" data-from="A" data-seq="B"
        hx-swap-oob="true" hidden>

``data-seq`` is the last session event seq the frame brings the page to; swapping the header in
keeps the page's resume point (``#ws-seq[data-seq]``) current. Error frames carry
``<div id="ws-error" data-kind="error" data-code=...>`` instead and leave the seq alone.

Appends: ``message.appended`` becomes ``<span hx-swap-oob="beforeend:#msg-N-text"
data-offset=.. data-end=..>``. The browser (static/js/live.js) applies it only when the offset
equals the length it holds for that message (kept in ``data-len``, counted in code points like the
server), so replaying an append never duplicates text, and a gap asks for a fresh snapshot.

Notices: the retry banner counts down in the browser. Every rendering of a notice carries
``data-server-now-ms`` (this server's clock when the frame or page was built) next to
``data-retry-at-ms``, so each browser measures its clock offset on receipt and every device shows
the same remaining time without a write per second.

Approvals: ``approval.upserted`` becomes the card's row appended to ``#transcript`` (skipped by
live.js when the page has it) followed by an out-of-band swap of ``#approval-N-card``, so a new
request shows up in order and a decided one turns into its one-line outcome for every viewer.

Size: Daphne refuses to send a websocket message over 1 MiB and closes the socket with 1011, and
the page would ask again from the same point and get the same frame. So no frame is larger than
``MAX_FRAME_BYTES``: ``replay_frames`` packs a replay into as many frames as it takes (each one
a run of whole events with its own header, so a page that loses the socket half-way resumes from
the last one it applied), and ``frame_parts`` cuts any frame still too large (a snapshot of a long
transcript, one long append, a long finished answer's re-render) into parts,
``<!--ws-part I/N-->`` followed by the next slice of the frame. live.js joins the N parts of one
frame and applies them as that one frame; parts of one frame are sent back to back on one socket,
and a socket that drops half-way forgets its parts (the resume sends the frame again).

This module is pure rendering (no database): consumers call it in the event loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.template.loader import render_to_string
from django.utils.html import format_html, format_html_join

from sessions_app import event_types as ev

KIND_SNAPSHOT = "snapshot"
KIND_EVENTS = "events"

# The largest websocket frame the server sends, in UTF-8 bytes. Daphne (autobahn) refuses any
# over 1 MiB (1,048,576 bytes); a quarter of that leaves room for a proxy with a smaller limit
# and keeps one frame's parse in the browser short.
MAX_FRAME_BYTES = 256 * 1024
_PART_PREFIX = "<!--ws-part {}/{}-->"
# Room for the prefix of any part: "<!--ws-part 99999/99999-->" is 26 bytes.
_PART_BUDGET = MAX_FRAME_BYTES - 32
_HEADER = (
    '<span id="ws-seq" data-kind="{}" data-from="{}" data-seq="{}" hx-swap-oob="true" hidden>'
    "</span>"
)
_HEADER_BYTES = len(_HEADER) + 40  # with two 20-digit seqs, an upper bound


def frame_header(*, kind: str, first_seq: int, last_seq: int) -> str:
    return format_html(_HEADER, kind, first_seq, last_seq)


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class _Frame:
    """What every event rendering in one frame shares."""

    session_id: int
    now_ms: int


def snapshot_frame(*, snapshot: dict[str, Any], now_ms: int | None = None) -> str:
    """The whole live part of the session page, consistent with ``snapshot["last_seq"]``."""
    context = {"snapshot": snapshot, "oob": True, "server_now_ms": now_ms or wall_clock_ms()}
    body = render_to_string("sessions_app/partials/live_regions.html", context)
    last_seq = snapshot["last_seq"]
    return frame_header(kind=KIND_SNAPSHOT, first_seq=0, last_seq=last_seq) + body


def event_run_frame(
    *, session_id: int, events: Sequence[dict[str, Any]], now_ms: int | None = None
) -> str:
    """One frame for a run of consecutive events ({"seq", "event", "payload"} dicts), however
    large: a live event's frame, which frame_parts cuts when it must. A replay goes through
    replay_frames instead."""
    header = frame_header(kind=KIND_EVENTS, first_seq=events[0]["seq"], last_seq=events[-1]["seq"])
    frame = _Frame(session_id=session_id, now_ms=now_ms or wall_clock_ms())
    return header + "".join(_event_html(frame, e["event"], e["payload"]) for e in events)


def replay_frames(
    *, session_id: int, events: Sequence[dict[str, Any]], now_ms: int | None = None
) -> list[str]:
    """A replay (a run of consecutive events) as frames of whole events, each under
    MAX_FRAME_BYTES when its events allow (one event larger than that is a frame of its own, for
    frame_parts to cut)."""
    frame = _Frame(session_id=session_id, now_ms=now_ms or wall_clock_ms())
    budget = _PART_BUDGET - _HEADER_BYTES
    runs: list[list[tuple[int, str]]] = []
    size = 0
    for event in events:
        body = _event_html(frame, event["event"], event["payload"])
        body_size = len(body.encode())
        if not runs or size + body_size > budget:
            runs.append([])
            size = 0
        runs[-1].append((event["seq"], body))
        size += body_size
    return [_events_frame_of(run) for run in runs]


def _events_frame_of(run: list[tuple[int, str]]) -> str:
    header = frame_header(kind=KIND_EVENTS, first_seq=run[0][0], last_seq=run[-1][0])
    return header + "".join(body for _, body in run)


def frame_parts(frame: str) -> list[str]:
    """``frame`` as it goes on the wire: itself when it fits MAX_FRAME_BYTES, else parts that do.
    Cuts fall between characters (never inside a UTF-8 sequence), so each part is valid text."""
    if len(frame) * 4 <= _PART_BUDGET:
        return [frame]
    data = frame.encode()
    if len(data) <= MAX_FRAME_BYTES:
        return [frame]
    slices: list[str] = []
    start = 0
    while start < len(data):
        end = min(start + _PART_BUDGET, len(data))
        while end < len(data) and data[end] & 0xC0 == 0x80:  # a continuation byte
            end -= 1
        slices.append(data[start:end].decode())
        start = end
    count = len(slices)
    return [_PART_PREFIX.format(i, count) + part for i, part in enumerate(slices, start=1)]


def board_frame(*, columns: list[dict[str, Any]], now_ms: int | None = None) -> str:
    """The board's columns as one out-of-band swap of ``#board-columns``."""
    context = {"columns": columns, "oob": True, "server_now_ms": now_ms or wall_clock_ms()}
    return render_to_string("sessions_app/partials/board_columns.html", context)


def error_frame(*, code: str, message: str) -> str:
    return format_html(
        '<div id="ws-error" data-kind="error" data-code="{}" hx-swap-oob="true" hidden>{}</div>',
        code,
        message,
    )


def event_html(
    *, session_id: int, event: str, payload: dict[str, Any], now_ms: int | None = None
) -> str:
    frame = _Frame(session_id=session_id, now_ms=now_ms or wall_clock_ms())
    return _event_html(frame, event, payload)


def _event_html(frame: _Frame, event: str, payload: dict[str, Any]) -> str:
    render = _RENDERERS.get(event)
    # Unknown or purely bookkeeping events still advance the seq (the header does that).
    return render(frame, payload) if render else ""


def _message_created(frame: _Frame, payload: dict[str, Any]) -> str:
    message = payload["message"]
    row = render_to_string(
        "sessions_app/partials/message.html", {"m": message, "session_id": frame.session_id}
    )
    return format_html(
        '<div hx-swap-oob="beforeend:#transcript" data-created="msg-{}">{}</div>',
        message["id"],
        row,
    )


def _message_appended(frame: _Frame, payload: dict[str, Any]) -> str:
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


def _message_updated(frame: _Frame, payload: dict[str, Any]) -> str:
    context = {"m": payload["message"], "session_id": frame.session_id, "oob": True}
    return render_to_string("sessions_app/partials/message.html", context)


def _message_deleted(frame: _Frame, payload: dict[str, Any]) -> str:
    return format_html_join(
        "", '<div id="msg-{}" hx-swap-oob="delete"></div>', ((int(i),) for i in payload["ids"])
    )


def _session_updated(frame: _Frame, payload: dict[str, Any]) -> str:
    context = {
        "session_id": frame.session_id,
        "state": payload["state"],
        "recovery_actions": payload.get("recovery_actions", []),
        "explanation": payload.get("explanation", ""),
        "queue": payload.get("queue"),
        "switch_targets": payload.get("switch_targets", []),
        "fresh_restore": payload.get("fresh_restore"),
        "oob": True,
    }
    return render_to_string("sessions_app/partials/session_state.html", context)


def _notice_upserted(frame: _Frame, payload: dict[str, Any]) -> str:
    context = {
        "notice": payload.get("notice"),
        "session_id": frame.session_id,
        "server_now_ms": frame.now_ms,
        "oob": True,
    }
    return render_to_string("sessions_app/partials/notice.html", context)


def _notice_deleted(frame: _Frame, payload: dict[str, Any]) -> str:
    # Removes exactly the notices named, so a deletion replayed after a newer upsert is harmless.
    return format_html_join(
        "", '<div id="notice-{}" hx-swap-oob="delete"></div>', ((int(i),) for i in payload["ids"])
    )


def _approval_upserted(frame: _Frame, payload: dict[str, Any]) -> str:
    # Two swaps: the row appended to the transcript unless the page has it already (live.js
    # skips a data-created fragment whose id exists: a pending card seen before, or one the
    # snapshot brought), then the card replaced by id, so every viewer's card shows the answer.
    approval = payload["approval"]
    context = {"a": approval, "session_id": frame.session_id}
    row = render_to_string("sessions_app/partials/approval.html", context)
    card = render_to_string(
        "sessions_app/partials/approval.html", {**context, "card_only": True, "oob": True}
    )
    return format_html(
        '<div hx-swap-oob="beforeend:#transcript" data-created="approval-{}">{}</div>{}',
        int(approval["id"]),
        row,
        card,
    )


_RENDERERS: dict[str, Callable[[_Frame, dict[str, Any]], str]] = {
    ev.MESSAGE_CREATED: _message_created,
    ev.MESSAGE_APPENDED: _message_appended,
    ev.MESSAGE_UPDATED: _message_updated,
    ev.MESSAGE_DELETED: _message_deleted,
    ev.SESSION_UPDATED: _session_updated,
    ev.NOTICE_UPSERTED: _notice_upserted,
    ev.NOTICE_DELETED: _notice_deleted,
    ev.APPROVAL_UPSERTED: _approval_upserted,
}
