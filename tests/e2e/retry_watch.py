"""Watching a retry from both sides: what each browser showed (recorded in the page on every DOM
change, so a state that lasted a few milliseconds is still seen) and what the server held (the
JSON API and the notice table, polled from a thread while the retry runs)."""

from __future__ import annotations

import json
import threading
import urllib.request
from dataclasses import dataclass, field

import psycopg

# Installed in a page: records every distinct attempt label and countdown text of the banner, and
# every element of the banner, badge, composer actions or recovery card whose computed text,
# background or border color is red (a hue within 15 degrees of pure red, clearly saturated).
WATCH_PAGE_JS = """() => {
  const seen = { attempts: [], countdowns: [], banners: [], red: [] };
  window.__retrySeen = seen;
  const redness = (color) => {
    const m = color.match(/rgba?\\(([\\d.]+),\\s*([\\d.]+),\\s*([\\d.]+)(?:,\\s*([\\d.]+))?/);
    if (!m || (m[4] !== undefined && parseFloat(m[4]) === 0)) return false;
    const [r, g, b] = [m[1], m[2], m[3]].map(Number);
    const max = Math.max(r, g, b), min = Math.min(r, g, b);
    if (max < 90 || max - min < 0.35 * max || max !== r) return false;
    const hue = 60 * ((g - b) / (max - min));
    return hue < 15 && hue > -15;
  };
  const note = (list, value) => { if (list.at(-1) !== value) list.push(value); };
  const record = () => {
    const attempt = document.querySelector('#notice .notice-attempt');
    note(seen.attempts, attempt ? attempt.textContent : null);
    const countdown = document.querySelector('#notice .notice-countdown');
    note(seen.countdowns, countdown ? countdown.textContent : null);
    const parts = ['.notice-reason', '.notice-countdown', '.notice-attempt', '.notice-meta']
      .map((part) => document.querySelector(`#notice ${part}`));
    // A held turn's banner has no attempt label: the parts it has, in order.
    const texts = parts.filter((el) => el).map((el) => el.textContent.trim());
    if (parts[0]) note(seen.banners, texts.join(' '));
    const watched = document.querySelectorAll(
      '#session-state, #notice, #notice *, #composer-actions .btn, #recovery, #recovery *');
    for (const el of watched) {
      const style = getComputedStyle(el);
      for (const prop of ['color', 'backgroundColor', 'borderTopColor']) {
        if (redness(style[prop])) seen.red.push(`${el.id || el.className} ${prop} ${style[prop]}`);
      }
    }
  };
  new MutationObserver(record).observe(document.body,
    { subtree: true, childList: true, characterData: true, attributes: true });
  record();
}"""


def watch_page(page) -> None:
    page.evaluate(WATCH_PAGE_JS)


def page_seen(page) -> dict:
    return page.evaluate("window.__retrySeen")


@dataclass(slots=True)
class ServerSample:
    state: str
    notice_attempt: int | None
    notice_rows: int


@dataclass(slots=True)
class ServerWatch:
    """Polls GET /api/v1/sessions/{id} and the notice table every 100 ms until stopped."""

    base_url: str
    database_url: str
    token: str
    session_id: int
    samples: list[ServerSample] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> ServerWatch:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(timeout=10)

    def _run(self) -> None:
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            while not self._stop.is_set():
                self.samples.append(self.sample(conn))
                self._stop.wait(0.1)

    def sample(self, conn: psycopg.Connection) -> ServerSample:
        detail = api_get(self.base_url, f"/api/v1/sessions/{self.session_id}", token=self.token)
        rows = conn.execute(
            "SELECT count(*) FROM ladder_retrynotice WHERE session_id = %s AND retired_at IS NULL",
            (self.session_id,),
        ).fetchone()[0]
        notice = detail["notice"]
        return ServerSample(
            state=detail["state"],
            notice_attempt=notice["attempt"] if notice else None,
            notice_rows=rows,
        )


def api_get(base_url: str, path: str, *, token: str) -> dict:
    request = urllib.request.Request(base_url + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def mock_requests(mock_url: str) -> list[dict]:
    with urllib.request.urlopen(f"{mock_url}/_mock/requests", timeout=10) as response:
        return json.loads(response.read())["requests"]
