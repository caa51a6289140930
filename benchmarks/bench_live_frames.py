"""The session page's script cost per websocket frame on a long transcript: static/js/live.js as
it is against the live.js that rescanned the whole page on every frame
(benchmarks/fixtures/live_before.js), side by side in one run.

    python -m benchmarks.bench_live_frames

The page is the real session page (templates, htmx and its ws extension) with TRANSCRIPT
messages, served to Debian's Chromium from memory (no server: Playwright answers every request),
and its websocket is a stand-in the benchmark pushes frames into. The frames are the real
frames.py renderings of a stream of turns as the server sends them: a prompt created, its answer
created, APPENDS appended deltas, the finished answer re-rendered, the session back to idle.
Each frame's time runs from handing the message to the socket to the end of its synchronous
handling (the ws extension's swaps and every live.js handler of the frame), with the page given
a painted frame between two pushes. Rounds alternate between the two scripts, so machine load
hits both alike; reported are the medians of the per-frame times and their ratio. The current
script also streams the same frames after a SHORT_TRANSCRIPT conversation, and the same page
streams them with no live.js at all (htmx and its ws extension alone): what the per-frame time
still grows by with the transcript is theirs, not live.js's.

The target is a ratio: the work that used to grow with the transcript (finding the latest prompt
and answer, rendering every timestamp, looking for countdowns) now follows the frame, so on
TRANSCRIPT messages the same frames must cost at most 1 / RATIO_FLOOR of what they did.
"""

from __future__ import annotations

import os
import re
import statistics
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kandev_web.settings")
django.setup()

from django.contrib.auth.models import AnonymousUser  # noqa: E402
from django.contrib.staticfiles import finders  # noqa: E402
from django.template.loader import render_to_string  # noqa: E402
from django.test import RequestFactory  # noqa: E402
from playwright.sync_api import Page, Route, sync_playwright  # noqa: E402

from devtools.browser import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from sessions_app import events as ev  # noqa: E402
from sessions_app.frames import event_run_frame  # noqa: E402

TRANSCRIPT = 2_000  # messages on the page before the stream starts
SHORT_TRANSCRIPT = 200  # the same stream after a short conversation, for scale
TURNS = 2  # turns streamed per round
APPENDS = 20  # deltas per streamed answer
ROUNDS = 3  # pairs, alternating
RATIO_FLOOR = 5.0
SESSION_ID = 1
ORIGIN = "http://bench.kandev.test"
HASHED = re.compile(r"\.[0-9a-f]{12}(\.\w+)$")
AFTER = Path(__file__).resolve().parent.parent / "static/js/live.js"
BEFORE = Path(__file__).resolve().parent / "fixtures/live_before.js"
NO_SCRIPT = None  # live.js answered with an empty body

ANSWER = (
    "Here is what I found:\n\n- the first point, with `inline code`\n- the second point\n\n"
    "```python\ndef total(values):\n    return sum(values)\n```\n\nThat should do it."
)

# A websocket that never touches the network: htmx's ws extension and live.js get it from
# `new WebSocket(url)`, and window.__push hands it one message, timed to the end of its handling.
FAKE_SOCKET = """
class FakeSocket extends EventTarget {
  constructor(url) {
    super();
    this.url = url; this.readyState = 0; this.binaryType = "blob";
    window.__socket = this;
    setTimeout(() => { this.readyState = 1; this.emit("open", new Event("open")); }, 0);
  }
  send() {}
  close() { this.readyState = 3; }
  emit(type, event) { if (this["on" + type]) this["on" + type](event); this.dispatchEvent(event); }
}
Object.assign(FakeSocket, { CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3 });
window.WebSocket = FakeSocket;
window.__push = (data) => new Promise((resolve) => {
  const start = performance.now();
  window.__socket.emit("message", new MessageEvent("message", { data }));
  const took = performance.now() - start;
  requestAnimationFrame(() => setTimeout(() => resolve(took), 0));
});
"""


def _message(pk: int, role: str, text: str, *, status: str = "done", at: datetime) -> dict:
    return {
        "id": pk,
        "role": role,
        "text": text,
        "status": status,
        "incomplete": False,
        "generation": pk // 2 + 1,
        "metadata": {},
        "created": at.isoformat(),
    }


def _transcript(now: datetime, *, length: int) -> list[dict]:
    start = now - timedelta(minutes=length)
    return [
        _message(
            pk,
            "user" if pk % 2 else "assistant",
            f"Question number {pk}?" if pk % 2 else ANSWER,
            at=start + timedelta(minutes=pk),
        )
        for pk in range(1, length + 1)
    ]


def session_page(messages: list[dict]) -> str:
    """The session page as views._session_page renders it, for a viewer of SESSION_ID."""
    request = RequestFactory().get(f"/sessions/{SESSION_ID}/")
    request.user = AnonymousUser()
    snapshot = {
        "id": SESSION_ID,
        "title": "A long conversation",
        "state": "idle",
        "messages": messages,
        "notice": None,
        "recovery_actions": [],
        "explanation": "",
        "queue": None,
        "switch_targets": [],
        "last_seq": len(messages),
    }
    context = {
        "snapshot": snapshot,
        "ws_path": f"/ws/sessions/{SESSION_ID}/",
        "max_prompt_chars": 32_000,
        "draft": "",
        "error": "",
        "recent_sessions": [],
        "server_now_ms": 0,
    }
    return render_to_string("sessions_app/session.html", context, request=request)


def stream_frames(*, transcript: int, now: datetime) -> list[str]:
    """TURNS turns after ``transcript`` messages as the server pushes them: one frame per event,
    as live events go out."""
    frames: list[str] = []
    seq = pk = transcript

    def push(event: str, payload: dict[str, Any]) -> None:
        nonlocal seq
        seq += 1
        frames.append(
            event_run_frame(
                session_id=SESSION_ID,
                events=[{"seq": seq, "event": event, "payload": payload}],
                now_ms=1,
            )
        )

    delta = "streamed words, a few at a time; "
    for _ in range(TURNS):
        prompt = _message(pk + 1, "user", "One more question?", at=now)
        push(ev.MESSAGE_CREATED, {"message": prompt})
        answer = _message(pk + 2, "assistant", "", status="streaming", at=now)
        push(ev.MESSAGE_CREATED, {"message": answer})
        for index in range(APPENDS):
            push(ev.MESSAGE_APPENDED, {"id": pk + 2, "offset": index * len(delta), "text": delta})
        done = _message(pk + 2, "assistant", delta * APPENDS, at=now)
        push(ev.MESSAGE_UPDATED, {"message": done})
        push(ev.SESSION_UPDATED, {"state": "idle"})
        pk += 2
    return frames


def _serve(page: Page, *, html: str, live_js: Path | None) -> None:
    def answer(route: Route) -> None:
        path = route.request.url.removeprefix(ORIGIN)
        if path.startswith("/static/"):
            # A hashed name (css/app.0123456789ab.css) is served from its source file.
            name = HASHED.sub(r"\1", path.removeprefix("/static/").split("?")[0])
            kind = "text/css" if name.endswith(".css") else "application/javascript"
            if name != "js/live.js":
                body = Path(finders.find(name)).read_bytes()
            else:
                body = live_js.read_bytes() if live_js else b""
            route.fulfill(status=200, body=body, content_type=kind)
        elif path.startswith(f"/sessions/{SESSION_ID}/"):
            route.fulfill(status=200, body=html, content_type="text/html; charset=utf-8")
        else:
            route.fulfill(status=404, body="")

    page.route(f"{ORIGIN}/**", answer)


def one_round(
    browser: Any, *, html: str, frames: list[str], live_js: Path | None
) -> dict[str, Any]:
    page = browser.new_page()
    try:
        page.add_init_script(FAKE_SOCKET)
        _serve(page, html=html, live_js=live_js)
        page.goto(f"{ORIGIN}/sessions/{SESSION_ID}/")
        page.wait_for_function("() => window.__socket && window.__socket.readyState === 1")
        page.wait_for_function("() => document.readyState === 'complete'")
        times = [page.evaluate("frame => window.__push(frame)", frame) for frame in frames]
        shown = page.evaluate(
            """() => ({
              rows: document.querySelectorAll('#transcript .msg').length,
              latest: [...document.querySelectorAll('#transcript [data-latest]')].map(e => e.id),
            })"""
        )
        return {"median_ms": statistics.median(times), "shown": shown}
    finally:
        page.close()


def run() -> list[dict]:
    now = datetime.now(UTC)
    html = session_page(_transcript(now, length=TRANSCRIPT))
    frames = stream_frames(transcript=TRANSCRIPT, now=now)
    short_html = session_page(_transcript(now, length=SHORT_TRANSCRIPT))
    short_frames = stream_frames(transcript=SHORT_TRANSCRIPT, now=now)
    before: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []
    short: list[dict[str, Any]] = []
    bare: list[dict[str, Any]] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for _ in range(ROUNDS):
                before.append(one_round(browser, html=html, frames=frames, live_js=BEFORE))
                after.append(one_round(browser, html=html, frames=frames, live_js=AFTER))
                short.append(
                    one_round(browser, html=short_html, frames=short_frames, live_js=AFTER)
                )
                bare.append(one_round(browser, html=html, frames=frames, live_js=NO_SCRIPT))
        finally:
            browser.close()
    before_ms = statistics.median(r["median_ms"] for r in before)
    after_ms = statistics.median(r["median_ms"] for r in after)
    short_ms = statistics.median(r["median_ms"] for r in short)
    bare_ms = statistics.median(r["median_ms"] for r in bare)
    ratio = before_ms / after_ms if after_ms else float("inf")
    same = all(r["shown"] == before[0]["shown"] for r in before + after)
    expected_rows = TRANSCRIPT + 2 * TURNS
    return [
        {
            "metric": f"frames per round on a {TRANSCRIPT:,}-message transcript",
            "value": f"{len(frames)} ({TURNS} turns of {APPENDS} appends)",
            "target": "-",
        },
        {"metric": "script ms per frame, before (whole-page rescans)", "value": before_ms},
        {"metric": "script ms per frame, after", "value": after_ms},
        {
            "metric": f"script ms per frame, after, on a {SHORT_TRANSCRIPT}-message transcript",
            "value": short_ms,
        },
        {
            "metric": "ms per frame with no live.js (htmx and its ws extension alone)",
            "value": bare_ms,
        },
        {
            "metric": "per-frame script time, before / after",
            "value": round(ratio, 1),
            "target": f">= {RATIO_FLOOR:g}",
            "ok": ratio >= RATIO_FLOOR,
        },
        {
            "metric": "same page after the stream (rows, latest prompt and answer)",
            "value": f"{before[0]['shown']['rows']} rows, latest {before[0]['shown']['latest']}",
            "target": f"{expected_rows} rows, equal",
            "ok": same and before[0]["shown"]["rows"] == expected_rows,
        },
    ]


if __name__ == "__main__":
    for row in run():
        print(row)
