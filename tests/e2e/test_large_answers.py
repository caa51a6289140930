"""A 5 MB answer on the real stack (mock provider, Celery worker, Daphne) in real Chromium pages:
Daphne refuses to send a websocket message over 1 MiB, so every frame must stay under
frames.MAX_FRAME_BYTES, and every viewer, however it joined, ends with the whole answer.

Each page records what arrives on its sockets (Playwright's frame events: the bytes Daphne sent)
and, in the page, every close code and every connect, so a page looping on one frame would show.
"""

from __future__ import annotations

import itertools
import re

import pytest

from sessions_app.frames import MAX_FRAME_BYTES
from tests.e2e.conftest import DESKTOP, logged_in_page

# The stack starts with the module's first test, and 5 MB through the worker takes a minute here.
pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

DAPHNE_LIMIT = 1_048_576
WORDS = 700_000
ANSWER = "".join(f"w{i} " for i in range(WORDS)).strip()  # 5.5 MB as the page shows it
# 700 deltas of 1,000 words, 20 ms apart: some 15 s of streaming, long enough to join late.
PROMPT = f"/long:{WORDS}:1000:20 five megabytes please"
LAST_ASSISTANT = "Array.from(document.querySelectorAll('#transcript .msg--assistant')).at(-1)"
WATCH_SCRIPT = """
window.__closes = []; window.__connects = 0;
document.addEventListener("htmx:wsClose", (e) => window.__closes.push(e.detail.event.code));
document.addEventListener("htmx:wsConnecting", () => { window.__connects += 1; });
"""


@pytest.fixture(scope="module")
def stack_settings() -> dict[str, str]:
    # Each flush rewrites the message row whole (until message storage is chunked, issue 13), so
    # at the default 0.1 s a 5 MB answer spends minutes in UPDATEs; one flush a second keeps it
    # to about a minute. Frames are what this module is about, and bigger appends test them more.
    return {"KANDEV_STREAM_FLUSH_INTERVAL": "1.0"}


class Viewer:
    """One logged-in page on the session, with the size of every frame its sockets received."""

    def __init__(self, browser, stack, session_id: int) -> None:
        self.page = logged_in_page(browser, stack, **DESKTOP)
        self.page.add_init_script(WATCH_SCRIPT)
        self.frame_sizes: list[int] = []
        self.socket_urls: list[str] = []
        self.page.on("websocket", self._watch)
        self.page.goto(f"/sessions/{session_id}/")
        self.wait_connected()

    def _watch(self, socket) -> None:
        # The board the login lands on has a socket of its own (also with a last_seq), and it
        # may open only after this watcher is attached: only the session's sockets count here.
        if "/ws/sessions/" not in socket.url:
            return
        self.socket_urls.append(socket.url)

        def received(payload) -> None:
            data = payload.encode() if isinstance(payload, str) else payload
            self.frame_sizes.append(len(data))

        socket.on("framereceived", received)

    def wait_connected(self) -> None:
        self.page.wait_for_function(
            "() => window.kandevLive.socket && window.kandevLive.socket.readyState === 1"
        )

    def seq(self) -> int:
        return self.page.evaluate("parseInt(document.getElementById('ws-seq').dataset.seq, 10)")

    def drop_socket_and_stay_away(self) -> None:
        """As a tab whose network is gone: its socket closes and nothing reconnects."""
        self.page.evaluate("window.kandevLive.closing = true; window.kandevLive.socket.close()")
        self.page.wait_for_function("() => window.kandevLive.socket.readyState === 3")

    def come_back(self) -> None:
        """The tab is back: live.js reconnects from the page's own resume point."""
        self.page.evaluate(
            "window.kandevLive.closing = false;"
            "document.dispatchEvent(new Event('visibilitychange'))"
        )
        self.wait_connected()

    # Polled every half second, from data-len (what live.js holds for the message): reading a
    # 5 MB text out of the page on every animation frame would be the heaviest thing on it.
    def wait_streaming(self, *, at_least: int) -> None:
        self.page.wait_for_function(
            f"() => {{ const m = {LAST_ASSISTANT}; return m && m.dataset.status === 'streaming'"
            f" && parseInt(m.querySelector('.text').dataset.len, 10) >= {at_least} }}",
            timeout=180_000,
            polling=500,
        )

    def wait_finished(self) -> None:
        self.page.wait_for_function(
            f"() => {{ const m = {LAST_ASSISTANT}; return m && m.dataset.status === 'complete'"
            " && document.getElementById('session-state').classList.contains('badge--idle') }",
            timeout=240_000,
            polling=500,
        )

    def answer_text(self) -> str:
        return self.page.evaluate(f"{LAST_ASSISTANT}.querySelector('.text').textContent").strip()

    def resume_points(self) -> list[int]:
        """The last_seq each of this page's sockets connected with, in order."""
        return [int(re.search(r"[?&]last_seq=(\d+)", url)[1]) for url in self.socket_urls]

    def watched(self) -> dict:
        return self.page.evaluate("({closes: window.__closes, connects: window.__connects})")

    def close(self) -> None:
        self.page.context.close()


def send_prompt(viewer: Viewer) -> None:
    viewer.page.fill("#composer-text", PROMPT)
    viewer.page.click("#composer-actions button")


def assert_frames_stayed_small(viewer: Viewer) -> None:
    assert viewer.frame_sizes, "no frame arrived"
    assert max(viewer.frame_sizes) <= MAX_FRAME_BYTES < DAPHNE_LIMIT
    assert sum(viewer.frame_sizes) > len(ANSWER)  # the answer did come over the socket


def assert_never_looped(viewer: Viewer) -> None:
    """No close for a frame too big (1009, 1011), and a page that did reconnect (a socket can
    still drop on a loaded machine) moved on each time: no two reconnects from the same point."""
    watched = viewer.watched()
    assert not {1009, 1011} & set(watched["closes"]), watched
    points = viewer.resume_points()
    assert len(points) == watched["connects"] <= 4, (points, watched)
    reconnects = points[1:]
    assert all(a < b for a, b in itertools.pairwise(reconnects)), points


def test_two_viewers_and_a_late_joiner_replaying_from_0_all_get_the_whole_5mb_answer(
    stack, browser
):
    session_id = stack.new_session("Five megabytes")
    first, second, late = (Viewer(browser, stack, session_id) for _ in range(3))
    start_seq = late.seq()
    late.drop_socket_and_stay_away()

    send_prompt(first)
    first.wait_streaming(at_least=len(ANSWER) // 5)
    late.come_back()  # joins a fifth of the way in and replays everything from where it was
    for viewer in (first, second, late):
        viewer.wait_finished()

    assert start_seq == 0
    assert late.resume_points()[:2] == [0, 0]  # loaded at seq 0, came back from seq 0
    texts = [viewer.answer_text() for viewer in (first, second, late)]
    assert texts[0] == ANSWER
    assert texts[1] == ANSWER and texts[2] == ANSWER
    for viewer in (first, second, late):
        assert_frames_stayed_small(viewer)
        assert_never_looped(viewer)
    for viewer in (first, second, late):
        viewer.close()


def test_a_viewer_that_reconnects_mid_answer_replays_from_the_middle(stack, browser):
    session_id = stack.new_session("Dropped mid-answer")
    watcher, dropped = (Viewer(browser, stack, session_id) for _ in range(2))

    send_prompt(watcher)
    dropped.wait_streaming(at_least=len(ANSWER) // 5)
    dropped.drop_socket_and_stay_away()
    resume_from = dropped.seq()
    watcher.wait_streaming(at_least=len(ANSWER) // 2)
    dropped.come_back()
    for viewer in (watcher, dropped):
        viewer.wait_finished()

    assert resume_from > 2  # the prompt, the answer's row and some of its text were applied
    assert dropped.resume_points()[:2] == [0, resume_from]
    assert watcher.answer_text() == ANSWER and dropped.answer_text() == ANSWER
    for viewer in (watcher, dropped):
        assert_frames_stayed_small(viewer)
        assert_never_looped(viewer)
    for viewer in (watcher, dropped):
        viewer.close()
