"""Tool activity people can read, through the app: the real mock ACP agent runs `/tool-diff`,
`/tool-terminal` and `/tool-fail` on the real worker path; the tool_call row, the session page, a
fresh snapshot frame and a live viewer's socket all show the kind, title, status, files and
content, with markup the agent sends (in a path, a diff, terminal output) shown as text."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.test import Client

from sessions_app.frames import event_run_frame, snapshot_frame
from sessions_app.models import Message, PromptGeneration, Session, SessionEvent
from sessions_app.selectors import events_after, session_snapshot
from tests.integration.acp_app.conftest import run_prompt
from tests.integration.web.conftest import parse_header, socket_for

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["socket_for"]  # the web tests' socket fixture, used here by name

State = PromptGeneration.State

# A file name, file text and terminal output that would run script if shown as markup. The name
# has no whitespace (the mock takes the first word of the prompt) and its "/" makes a folder.
HOSTILE_NAME = '"><svg/onload=alert(1)>.py'
HOSTILE_OLD = "<script>alert(2)</script>\n"
HOSTILE_NEW = '<script>alert(2)</script>\n<img src=x onerror="alert(3)">\n'
HOSTILE_OUTPUT = (
    "\x1b[31m<script>alert(4)</script>\x1b[0m\n"
    '<img src=x onerror="alert(5)">\n'
    "\x1b]8;;javascript:alert(6)\x1b\\a link\x1b]8;;\x1b\\\n"
)


def workspace(settings, chat: Session) -> Path:
    folder = Path(settings.KANDEV_ACP_WORKDIR) / f"session-{chat.pk}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def tool_row(chat: Session) -> Message:
    return Message.objects.get(session=chat, role=Message.Role.TOOL_CALL)


def statuses_pushed(chat: Session, row: Message) -> list[str]:
    """The tool's status in every event that showed its row, in the order viewers got them."""
    events = SessionEvent.objects.filter(session=chat, payload__message__id=row.pk).order_by("seq")
    return [e.payload["message"]["metadata"]["status"] for e in events]


def page_of(chat: Session, owner) -> str:
    client = Client()
    client.force_login(owner)
    response = client.get(f"/sessions/{chat.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def fresh_snapshot_frame(chat: Session) -> str:
    return snapshot_frame(snapshot=session_snapshot(session=chat))


def every_frame_event(chat: Session) -> str:
    """Every event of the session as a viewer catching up from zero receives it."""
    return event_run_frame(session_id=chat.pk, events=events_after(session=chat, after_seq=0))


def tool_card(html: str, row: Message) -> str:
    """The row's <article> as rendered last (a replay holds every revision)."""
    start = html.rindex(f'<article id="msg-{row.pk}"')
    end = html.index("</article>", start)
    return html[start:end]


class Elements(HTMLParser):
    """Every start tag and its attributes, and the text of inline scripts."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.inline_scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script and data.strip():
            self.inline_scripts.append(data)


def assert_inert(html: str) -> None:
    """No element the agent's text could have made: no svg or img, no event handler attribute,
    no inline script, no javascript: link."""
    parser = Elements()
    parser.feed(html)
    made = [tag for tag, _ in parser.tags if tag in ("svg", "img")]
    handlers = [(tag, key) for tag, attrs in parser.tags for key in attrs if key.startswith("on")]
    links = [attrs for tag, attrs in parser.tags if "javascript:" in (attrs.get("href") or "")]
    assert (made, handlers, links) == ([], [], [])
    assert not [s for s in parser.inline_scripts if "alert(" in s]
    assert "\x1b" not in html


# ---- a diff ---------------------------------------------------------------------------------


def test_an_edit_ends_done_with_its_file_and_a_diff_rendered_as_a_diff(
    chat, owner, clock, settings
):
    folder = workspace(settings, chat)
    (folder / "greet.py").write_text("def greet():\n    return 'hi'\n")
    (folder / "greet.py.new").write_text("def greet():\n    return 'hello'\n")

    generation = run_prompt(chat, owner, "/tool-diff greet.py", clock)

    assert generation.state == State.SUCCEEDED
    row = tool_row(chat)
    assert row.status == Message.Status.COMPLETE
    assert statuses_pushed(chat, row) == ["in_progress", "completed"]
    metadata = row.metadata
    assert (metadata["kind"], metadata["title"], metadata["status"]) == (
        "edit",
        "Edit greet.py",
        "completed",
    )
    assert metadata["locations"] == [{"path": "/workspace/greet.py", "line": 1}]
    (diff,) = metadata["content"]
    assert (diff["type"], diff["path"], diff["added"], diff["removed"]) == (
        "diff",
        "/workspace/greet.py",
        1,
        1,
    )
    assert diff["patch"].endswith(" def greet():\n-    return 'hi'\n+    return 'hello'\n")

    for html in (page_of(chat, owner), fresh_snapshot_frame(chat)):
        card = tool_card(html, row)
        assert 'data-kind="edit"' in card and 'data-tool-status="done"' in card
        assert '<span class="pill pill--done">Done</span>' in card
        assert "<code>/workspace/greet.py:1</code>" in card  # the file it touched
        assert '<details class="tool-block tool-block--diff"' in card
        assert "<span class=\"gd\">-    return 'hi'</span>" in card
        assert "<span class=\"gi\">+    return 'hello'</span>" in card
        assert '<span class="gu">@@ -1,2 +1,2 @@</span>' in card
        assert '<span class="diff-added">+1</span>' in card
        assert '<span class="diff-removed">\N{MINUS SIGN}1</span>' in card
        assert '<span class="tool-lines">(7 lines)</span>' in card


# ---- terminal output and a failure -----------------------------------------------------------


def test_terminal_output_shows_its_colours_as_classes_and_no_escape_codes(chat, owner, clock):
    generation = run_prompt(chat, owner, "/tool-terminal", clock)

    assert generation.state == State.SUCCEEDED
    row = tool_row(chat)
    assert row.status == Message.Status.COMPLETE
    assert statuses_pushed(chat, row) == ["in_progress", "completed"]
    assert (row.metadata["kind"], row.metadata["title"]) == ("execute", "make test")
    (output,) = row.metadata["content"]
    assert output["type"] == "text" and "\x1b[32mcollected 3 items" in output["text"]

    for html in (page_of(chat, owner), fresh_snapshot_frame(chat)):
        card = tool_card(html, row)
        assert '<span class="pill pill--done">Done</span>' in card
        assert 'Terminal output <span class="tool-lines">(5 lines)</span>' in card
        assert '<pre class="terminal" tabindex="0">' in card
        assert '<span class="ansi-bold">$ make test</span>' in card
        assert '<span class="ansi-fg-2">collected 3 items</span>' in card
        assert '<span class="ansi-fg-1 ansi-bold">FAILED</span>' in card
        assert '<span class="ansi-fg-10">2 passed</span>' in card
        assert "\x1b" not in card and "[0m" not in card
        assert "]0;make test" not in card  # the window title the output set is not text


def test_a_failed_tool_ends_failed_with_its_error_shown(chat, owner, clock):
    generation = run_prompt(chat, owner, "/tool-fail", clock)

    assert generation.state == State.SUCCEEDED  # the tool failed, the turn did not
    row = tool_row(chat)
    assert row.status == Message.Status.ERROR
    assert statuses_pushed(chat, row) == ["in_progress", "failed"]
    assert (row.metadata["kind"], row.metadata["title"]) == ("execute", "frobnicate --all")

    for html in (page_of(chat, owner), fresh_snapshot_frame(chat)):
        card = tool_card(html, row)
        assert 'data-tool-status="failed"' in card
        assert '<span class="pill pill--failed">Failed</span>' in card
        assert "(1 line)" in card
        assert '<span class="ansi-fg-1">bash: line 1: frobnicate: command not found</span>' in card


# ---- markup the agent sends ------------------------------------------------------------------


def test_markup_in_a_path_and_a_diff_is_shown_as_text_everywhere(chat, owner, clock, settings):
    hostile = workspace(settings, chat) / HOSTILE_NAME
    hostile.parent.mkdir(parents=True, exist_ok=True)
    hostile.write_text(HOSTILE_OLD)
    Path(f"{hostile}.new").write_text(HOSTILE_NEW)

    run_prompt(chat, owner, f"/tool-diff {HOSTILE_NAME}", clock)

    row = tool_row(chat)
    assert row.metadata["locations"] == [{"path": f"/workspace/{HOSTILE_NAME}", "line": 1}]
    for html in (page_of(chat, owner), fresh_snapshot_frame(chat), every_frame_event(chat)):
        card = tool_card(html, row)
        assert_inert(card)
        assert "&quot;&gt;&lt;svg/onload=alert(1)&gt;.py" in card  # title, file, diff path
        assert "&lt;img src=x onerror=" in card  # the added line, as text
        assert "+&lt;img src=x onerror=" in re.sub(r"<[^>]+>", "", card)
    assert_inert(page_of(chat, owner))  # the prompt that named the file too


def test_markup_and_escape_codes_in_terminal_output_are_shown_as_text_everywhere(
    chat, owner, clock, settings
):
    (workspace(settings, chat) / "evil.txt").write_text(HOSTILE_OUTPUT)

    run_prompt(chat, owner, "/tool-terminal evil.txt", clock)

    row = tool_row(chat)
    for html in (page_of(chat, owner), fresh_snapshot_frame(chat), every_frame_event(chat)):
        card = tool_card(html, row)
        assert_inert(card)
        assert '<span class="ansi-fg-1">&lt;script&gt;alert(4)&lt;/script&gt;</span>' in card
        assert "&lt;img src=x onerror=&quot;alert(5)&quot;&gt;" in card
        assert "a link" in card and "javascript:" not in card  # the OSC 8 link is dropped


# ---- a live viewer ---------------------------------------------------------------------------


def run_prompt_in_a_worker_thread(chat, owner, text, clock) -> tuple[Message, int]:
    """The prompt run as a worker runs it, on a thread of its own: its tool row, the session's
    last seq after."""
    try:
        run_prompt(chat, owner, text, clock)
        return tool_row(chat), Session.objects.get(pk=chat.pk).last_seq
    finally:
        connection.close()


async def test_a_live_viewer_sees_the_tool_card_revised_in_place(socket_for, owner, chat, clock):
    socket = socket_for(owner, f"/ws/sessions/{chat.pk}/")
    connected, _ = await socket.connect()
    assert connected
    assert parse_header(await socket.receive_from())["kind"] == "snapshot"

    run = sync_to_async(run_prompt_in_a_worker_thread, thread_sensitive=False)
    row, last_seq = await run(chat, owner, "/tool-terminal", clock)
    frames = [await socket.receive_from(timeout=10)]
    while parse_header(frames[-1])["last"] < last_seq:
        frames.append(await socket.receive_from(timeout=10))
    await socket.disconnect()

    live = "".join(frames)
    # Created once (appended to the transcript), then replaced by its id: never a second card.
    assert live.count(f'data-created="msg-{row.pk}"') == 1
    cards = re.findall(rf'<article id="msg-{row.pk}"[^>]*>.*?</article>', live, re.S)
    assert len(cards) == 2
    created, revised = cards
    assert "hx-swap-oob" not in created.split(">", 1)[0]
    assert 'hx-swap-oob="true"' in revised.split(">", 1)[0]
    assert '<span class="pill pill--running">Running</span>' in created
    assert '<span class="ansi-fg-2">collected 3 items</span>' in created
    assert '<span class="pill pill--done">Done</span>' in revised
    assert '<span class="ansi-fg-10">2 passed</span>' in revised
