"""How an approval reads: the pending card (what the agent wants to do, the agent's own options as
buttons, who it waits for and when it rejects by itself), the one-line outcome once settled, and
the frame every viewer gets. Pure rendering: no database."""

from __future__ import annotations

import re

import pytest

from sessions_app import event_types as ev
from sessions_app.frames import event_html
from sessions_app.templatetags.approvals import with_approvals

SCRIPT = "<script>alert(1)</script>"
OPTIONS = [
    {"option_id": "once", "name": "Allow once", "kind": "allow_once"},
    {"option_id": "always", "name": "Always allow `git`", "kind": "allow_always"},
    {"option_id": "no", "name": "Reject", "kind": "reject_once"},
]


def approval(**overrides) -> dict:
    fields = {
        "id": 7,
        "tool_call_id": "call-1",
        "kind": "edit",
        "title": "Edit notes.txt",
        "command": "",
        "paths": ["notes.txt"],
        "diff": {"path": "notes.txt", "old_text": "one\ntwo\n", "new_text": "one\n2\n"},
        "options": OPTIONS,
        "state": "pending",
        "option_id": "",
        "decided_by": "",
        "decided_at": None,
        "created": "2026-12-03T12:03:00+00:00",
        "deadline": "2026-12-03T12:33:00+00:00",
    }
    return fields | overrides


def frame(**overrides) -> str:
    return event_html(
        session_id=3, event=ev.APPROVAL_UPSERTED, payload={"approval": approval(**overrides)}
    )


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


def card_of(html: str) -> str:
    """The out-of-band card of a frame (the second of its two swaps)."""
    return html[html.rindex('<section id="approval-7-card"') :]


def test_a_pending_card_says_what_the_agent_wants_and_who_it_waits_for():
    card = card_of(frame())

    assert text(card).startswith("Needs approval ✎ Edit Edit notes.txt")
    # The file is named once, above its change.
    assert card.count("<code>notes.txt</code>") == 1 and 'class="tool-files"' not in card
    assert '<span class="diff-added">+1</span>' in card
    assert '<span class="gi">+2</span>' in card and '<span class="gd">-two</span>' in card
    assert (
        "The agent waits for a person: anyone on this session may answer. If nobody does by "
        '<time class="clock-time" datetime="2026-12-03T12:33:00+00:00">12:33 UTC</time>, it is '
        "rejected."
    ) in card


def test_a_command_is_shown_in_a_code_block():
    card = card_of(
        frame(
            kind="execute", title="make test", command="make test\n", paths=["Makefile"], diff=None
        )
    )

    assert "▶ Run make test" in text(card)
    assert '<ul class="tool-files" aria-label="Files"><li><code>Makefile</code></li></ul>' in card
    command = '<pre class="approval-command" tabindex="0" aria-label="Command"><code>make test\n'
    assert command in card


def test_each_option_the_agent_offered_is_a_button_with_its_name_styled_by_kind():
    card = card_of(frame())

    button = r'<button type="submit" name="option" value="([^"]+)" class="([^"]+)"'
    buttons = re.findall(button, card)
    assert buttons == [
        ("once", "btn btn--allow"),
        ("always", "btn btn--allow"),
        ("no", "btn btn--reject"),
    ]
    assert ">Always allow `git`</button>" in card
    # A plain form post without script, htmx's note swap with it.
    assert 'method="post" action="/sessions/3/approvals/decide/"' in card
    assert 'hx-post="/sessions/3/approvals/decide/" hx-target="#approval-7-note"' in card
    assert '<input type="hidden" name="approval" value="7">' in card


def test_the_agents_words_are_escaped_everywhere_on_the_card():
    html = frame(
        title=f"Edit {SCRIPT}",
        command=f"echo {SCRIPT}",
        paths=[f"{SCRIPT}.txt"],
        diff={"path": f"{SCRIPT}.txt", "old_text": "", "new_text": f"{SCRIPT}\n"},
        options=[{"option_id": '"><b>x', "name": SCRIPT, "kind": "allow_once"}],
    )

    assert "<script>" not in html and "<b>x" not in html
    assert html.count("&lt;script&gt;") >= 10  # title, command, path, diff, button; row and card


@pytest.mark.parametrize(
    ("overrides", "line"),
    [
        (
            {"state": "allowed", "option_id": "once", "decided_by": "alice"},
            "Allowed once by alice at 12:05 UTC",
        ),
        (
            {"state": "allowed", "option_id": "always", "decided_by": "alice"},
            "Allowed for the rest of this session by alice at 12:05 UTC",
        ),
        (
            {"state": "rejected", "option_id": "no", "decided_by": "bob"},
            "Rejected by bob at 12:05 UTC",
        ),
        (
            {"state": "allowed", "option_id": "once", "decided_by": "alice", "standing": True},
            "Allowed without asking (always allowed earlier in this session) by alice at 12:05 UTC",
        ),
        ({"state": "timed_out", "option_id": "no"}, "No answer in 30 min: rejected"),
        ({"state": "cancelled"}, "Cancelled when the turn stopped"),
    ],
)
def test_a_settled_request_is_one_line_saying_how_it_ended(overrides, line):
    decided_at = "2026-12-03T12:05:00+00:00" if "decided_by" in overrides else None
    html = frame(**overrides, decided_at=decided_at)
    card = html[html.index('<details id="approval-7-card"') :]

    assert (
        re.search(r"<summary>(.*?)</summary>", card)
        .group(1)
        .endswith(f'<span class="approval-outcome">{escaped_line(line)}</span>')
    )
    assert text(re.search(r"<summary>.*?</summary>", card).group(0)) == (
        f"Edit Edit notes.txt {line}"
    )
    assert "<button" not in html and "<form" not in html
    assert 'hx-swap-oob="true"' in card


def escaped_line(line: str) -> str:
    """The outcome as rendered: the person bold, the time a <time> live.js puts on local time."""
    match = re.match(r"(.*) by (\w+) at (\d\d:\d\d) UTC$", line)
    if not match:
        return line
    verdict, who, clock = match.groups()
    return (
        f"{verdict} by <strong>{who}</strong> at "
        f'<time class="clock-time" datetime="2026-12-03T12:05:00+00:00">{clock} UTC</time>'
    )


def test_a_decision_by_a_deleted_account_still_says_what_was_chosen():
    html = frame(state="rejected", option_id="no", decided_by="", decided_at=None)

    assert '<span class="approval-outcome">Rejected</span>' in html


def test_the_frame_appends_the_row_when_missing_then_swaps_the_card_by_id():
    html = frame()

    assert html.startswith(
        '<div hx-swap-oob="beforeend:#transcript" data-created="approval-7">'
        '<div id="approval-7" class="approval-row"><section id="approval-7-card"'
    )
    # The note under the card is in the row only: a frame never wipes a viewer's own note.
    assert html.count('id="approval-7-note"') == 1
    assert '<section id="approval-7-card" class="approval approval--pending"' in card_of(html)
    assert 'hx-swap-oob="true"' in card_of(html)
    assert "csrfmiddlewaretoken" not in html  # no request here: htmx sends the header


def test_approvals_take_their_place_among_the_messages_by_time():
    messages = [
        {"id": 1, "created": "2026-12-03T12:00:00+00:00"},
        {"id": 2, "created": "2026-12-03T12:03:00+00:00"},  # the tool call that asked
        {"id": 3, "created": "2026-12-03T12:06:00+00:00"},
    ]
    asked = approval(created="2026-12-03T12:03:00.500000+00:00")
    later = approval(id=8, created="2026-12-03T12:07:00+00:00")

    rows = with_approvals(messages, [asked, later])

    assert [(m and m["id"], a and a["id"]) for m, a in rows] == [
        (1, None), (2, None), (None, 7), (3, None), (None, 8)
    ]  # fmt: skip
    assert with_approvals(messages, None) == [(m, None) for m in messages]
