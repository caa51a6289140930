"""Finished answers render as sanitised markdown on the page, in snapshot frames and in the
message.updated frame that closes a stream; prompts and streaming text stay escaped plain text."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.templatetags.static import static
from django.test import Client

from sessions_app import event_types as ev
from sessions_app.frames import event_run_frame, snapshot_frame
from sessions_app.models import Message, PromptGeneration, Session
from sessions_app.selectors import message_dict, session_snapshot
from sessions_app.services import message_append, message_create, prompt_submit
from sessions_app.services.messages import message_finish, message_start_streaming
from sessions_app.templatetags.answers import highlight_css, render_answer, sanitise

pytestmark = pytest.mark.django_db

HOSTILE_ANSWER = """\
Here you go <script>alert("s1")</script> and <img src=x onerror="alert('s2')">.

<div onclick="alert('s3')">raw html</div> <a href="javascript:alert('s4')">raw link</a>

[md link](javascript:alert('s5')) [mixed case](JaVaScRiPt:alert('s6'))
[entity](&#106;avascript:alert('s7')) [data](data:text/html;base64,PHNjcmlwdD4=)
<javascript:alert('s8')> ![pixel](https://tracker.example/p.png "t")

[fine](https://example.com/docs) and [mail](mailto:a@example.com)
"""
MARKDOWN_ANSWER = """\
# Plan

Some **bold**, *italic* and `inline <code>`.

- one
- two

1. first
2. second

| name | size |
|:-----|-----:|
| a    | 1    |

```python
def greet(name):
    return f"hi {name}"
```
"""


class _Elements(HTMLParser):
    """Every real element and attribute in a fragment (escaped text is data, not markup)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, {name: value or "" for name, value in attrs}))


def assert_nothing_executable(html: str) -> None:
    parser = _Elements()
    parser.feed(html)
    assert parser.elements, "nothing parsed: the check would be vacuous"
    for tag, attrs in parser.elements:
        assert tag not in {"script", "img", "iframe", "svg", "style", "object", "embed"}, tag
        assert not [name for name in attrs if name.startswith("on")], (tag, attrs)
        for name in ("href", "src", "action", "formaction"):
            url = attrs.get(name, "").strip().lower()
            assert not re.match(r"(javascript|data|vbscript):", url), (tag, attrs)


def answer_for(session: Session, text: str, *, status: str = Message.Status.COMPLETE) -> Message:
    generation = PromptGeneration.objects.filter(session=session).first()
    return message_create(
        session=session,
        generation=generation,
        role=Message.Role.ASSISTANT,
        text=text,
        status=status,
    )


@pytest.fixture
def owner_client(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


def test_an_answer_renders_headings_lists_tables_inline_code_and_highlighted_code():
    html = render_answer(MARKDOWN_ANSWER)
    assert "<h1>Plan</h1>" in html
    assert "<strong>bold</strong>" in html and "<em>italic</em>" in html
    assert "<code>inline &lt;code&gt;</code>" in html
    assert "<ul>\n<li>one</li>" in html and "<ol>\n<li>first</li>" in html
    assert '<th style="text-align:right">size</th>' in html
    # Pygments tokens, inside a block that carries its own copy button.
    assert '<code class="language-python"><span class="k">def</span>' in html
    assert '<span class="nf">greet</span>' in html
    assert html.count('data-copy="code"') == 1


def test_links_keep_only_safe_schemes_and_open_with_noopener():
    html = render_answer(HOSTILE_ANSWER)
    assert_nothing_executable(html)
    assert (
        '<a href="https://example.com/docs" target="_blank" rel="noopener noreferrer">fine</a>'
        in html
    )
    assert '<a href="mailto:a@example.com" target="_blank" rel="noopener noreferrer">' in html
    # What the model wrote as raw HTML is shown as text, not dropped silently.
    assert "&lt;script&gt;" in html


def test_the_sanitiser_alone_removes_what_a_parser_bug_could_let_through():
    dirty = (
        '<p onmouseover="x()">a</p><script>x()</script><a href="javascript:x()">b</a>'
        '<a href=" JAVASCRIPT:x()">c</a><svg onload="x()"></svg><iframe src="https://e.com">'
        '</iframe><span class="k" style="color:red">d</span><style>*{}</style>'
    )
    clean = sanitise(dirty)
    assert_nothing_executable(clean)
    assert "<svg" not in clean and "<iframe" not in clean and "<style" not in clean
    assert 'style="color' not in clean
    assert '<span class="k">d</span>' in clean


def test_the_session_page_renders_answers_as_markdown_and_prompts_as_plain_text(
    owner_client, owner, session
):
    prompt_submit(session=session, user=owner, text="Why **not** <script>alert(1)</script>?")
    answer_for(session, MARKDOWN_ANSWER + "\n" + HOSTILE_ANSWER)
    page = owner_client.get(f"/sessions/{session.pk}/").content.decode()
    transcript = page[page.index('id="transcript"') :]
    assert_nothing_executable(transcript)
    assert "<h1>Plan</h1>" in transcript and '<span class="k">def</span>' in transcript
    # The prompt is exactly what the person typed: escaped, its asterisks untouched.
    assert "Why **not** &lt;script&gt;alert(1)&lt;/script&gt;?" in transcript
    assert f'href="{static("css/highlight.css")}"' in page


def test_a_snapshot_frame_carries_the_rendered_and_sanitised_answer(owner, session):
    answer_for(session, HOSTILE_ANSWER + MARKDOWN_ANSWER)
    frame = snapshot_frame(snapshot=session_snapshot(session=session), now_ms=1)
    assert_nothing_executable(frame)
    assert '<code class="language-python">' in frame and "<h1>Plan</h1>" in frame


def test_streaming_text_stays_plain_until_the_finished_answer_replaces_it(owner, session):
    generation = prompt_submit(session=session, user=owner, text="go")
    message = message_start_streaming(session=session, generation=generation)
    message_append(message=message, text="# Plan <script>alert(1)</script>\n")
    message_append(message=message, text="[x](javascript:alert(2))")

    streaming = snapshot_frame(snapshot=session_snapshot(session=session), now_ms=1)
    streamed = Message.objects.get(pk=message.pk).full_text  # the row's text and its chunks
    plain = f'<div class="text" id="msg-{message.pk}-text" data-len="{len(streamed)}">'
    assert plain + "# Plan &lt;script&gt;" in streaming
    assert "<h1>" not in streaming

    message_finish(message=message)
    event = session.events.get(type=ev.MESSAGE_UPDATED, payload__message__id=message.pk)
    frame = event_run_frame(
        session_id=session.pk,
        events=[{"seq": event.seq, "event": event.type, "payload": event.payload}],
        now_ms=1,
    )
    assert_nothing_executable(frame)
    assert f'<article id="msg-{message.pk}"' in frame and 'hx-swap-oob="true"' in frame
    assert '<div class="text md"' in frame and "<h1>Plan &lt;script&gt;" in frame


def test_a_message_updated_frame_sanitises_a_hostile_answer(owner, session):
    message = answer_for(session, HOSTILE_ANSWER)
    payload = {"message": message_dict(message)}
    frame = event_run_frame(
        session_id=session.pk,
        events=[{"seq": 99, "event": ev.MESSAGE_UPDATED, "payload": payload}],
        now_ms=1,
    )
    assert_nothing_executable(frame)
    assert 'href="https://example.com/docs"' in frame


def test_the_committed_highlight_stylesheet_matches_the_pygments_styles():
    committed = Path(settings.BASE_DIR, "static", "css", "highlight.css").read_text()
    assert committed == highlight_css(), "run `make highlight-css` and commit the result"


def test_code_blocks_and_tables_take_keyboard_focus_so_they_scroll_without_a_mouse():
    html = str(render_answer("```\nx = 1\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"))
    assert re.search(r'<pre tabindex="0"[ >]', html)
    assert '<table tabindex="0">' in html
    # Hostile text that spells the tags stays text, untouched.
    assert "&lt;pre" in str(render_answer("`<pre>` and `<table>`"))
    assert "tabindex" not in str(render_answer("`<pre>` and `<table>`"))
