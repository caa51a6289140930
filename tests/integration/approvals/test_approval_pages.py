"""Approvals on the session page, in its snapshot and on the board: a reload or a late viewer sees
the pending card and how earlier ones ended; the card's buttons work with and without script, and
a second answer is told calmly who was first; the session and the board say "Needs approval"."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from sessions_app.approvals.models import Approval
from sessions_app.approvals.selectors import session_page_snapshot
from sessions_app.approvals.services import approval_decide, approval_request, approval_resume
from sessions_app.frames import snapshot_frame
from sessions_app.models import Message
from sessions_app.services import generation_claim, prompt_submit
from sessions_app.services.messages import message_create
from tests.support.factories import SessionFactory

pytestmark = pytest.mark.django_db

OPTIONS = [
    {"option_id": "yes", "name": "Allow once", "kind": "allow_once"},
    {"option_id": "no", "name": "Reject", "kind": "reject_once"},
]
CLOCK = r'<time class="clock-time" datetime="[^"]+">\d\d:\d\d UTC</time>'


def asking(session, user, *, title="make test") -> Approval:
    """The agent of a running turn asks to run ``title``, as the worker's asker will."""
    generation = generation_claim(
        generation_id=prompt_submit(session=session, user=user, text="run the tests").pk
    )
    return approval_request(
        generation=generation,
        tool_call_id="call-1",
        kind="execute",
        title=title,
        command=title,
        paths=[],
        diff=None,
        options=OPTIONS,
    )


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def decide(client: Client, session, approval_id, option: str, *, htmx: bool):
    headers = {"HX-Request": "true"} if htmx else {}
    return client.post(
        f"/sessions/{session.pk}/approvals/decide/",
        {"approval": approval_id, "option": option},
        headers=headers,
    )


def cards(html: str) -> list[tuple[str, str]]:
    return re.findall(r'id="approval-(\d+)-card" class="approval ([^"]+)"', html)


def test_a_reload_shows_the_pending_card_and_how_earlier_requests_ended(owner, session):
    first = asking(session, owner, title="ls")
    approval_decide(approval_id=first.pk, user=owner, option_id="no")
    # The turn goes on (the worker's asker resumes it), and its agent asks again later.
    generation = Approval.objects.get(pk=first.pk).generation
    approval_resume(generation=generation)
    second = approval_request(
        generation=generation,
        tool_call_id="call-2",
        kind="execute",
        title="make test",
        command="make test",
        paths=[],
        diff=None,
        options=OPTIONS,
    )

    page = signed_in(owner).get(f"/sessions/{session.pk}/").content.decode()
    frame = snapshot_frame(snapshot=session_page_snapshot(session=session))

    for html in (page, frame):
        assert cards(html) == [
            (str(first.pk), "approval--settled approval--rejected"),
            (str(second.pk), "approval--pending"),
        ]
        assert re.search(f"Rejected by <strong>owner</strong> at {CLOCK}", html)
        assert html.count('name="option"') == 2  # the pending card's buttons only
    assert 'name="csrfmiddlewaretoken"' in page  # the page's form posts without script
    assert "csrfmiddlewaretoken" not in frame


def test_the_card_sits_after_the_prompt_that_led_to_it(owner, session):
    approval = asking(session, owner)
    later = message_create(
        session=session, generation=approval.generation, role=Message.Role.ASSISTANT, text="Done."
    )

    page = signed_in(owner).get(f"/sessions/{session.pk}/").content.decode()

    prompt_at = page.index('data-role="user"')
    card_at = page.index(f'id="approval-{approval.pk}"')
    assert prompt_at < card_at < page.index(f'id="msg-{later.pk}"')


def test_the_session_says_needs_approval_and_offers_stop_while_the_agent_waits(owner, session):
    asking(session, owner)

    page = signed_in(owner).get(f"/sessions/{session.pk}/").content.decode()

    assert re.search(
        r'id="session-state"\s+class="badge badge--needs_approval">Needs approval', page
    )
    assert 'class="btn btn--stop"' in page and "btn--send" not in page


def test_the_board_shows_needs_approval_on_the_card_and_its_column(owner, session):
    asking(session, owner)
    SessionFactory(owner=owner, target=session.target, title="Quiet one")

    board = signed_in(owner).get("/").content.decode()

    card = board[board.index(f'id="task-{session.task_id}"') :]
    card = card[: card.index("</article>")]
    assert 'class="card task task--needs-approval"' in board
    assert 'data-state="needs_approval">Needs approval</span>' in card
    working = board[board.index('id="column-in_progress-title"') :]
    assert working[: working.index("</h2>")].endswith(
        '<span class="badge badge--needs_approval column-approvals">1 needs approval</span>'
    )
    assert board.count("needs approval</span>") == 1  # the quiet session's task shows nothing


def test_the_button_answers_over_htmx_with_an_empty_note_and_the_row_is_decided(owner, session):
    approval = asking(session, owner)

    response = decide(signed_in(owner), session, approval.pk, "yes", htmx=True)

    assert (response.status_code, response.content) == (200, b"")
    approval.refresh_from_db()
    assert (approval.state, approval.decided_by) == (Approval.State.ALLOWED, owner)


def test_a_second_answer_over_htmx_is_told_who_was_first_with_409(owner, stranger, session):
    session.members.add(stranger)
    approval = asking(session, owner)
    decide(signed_in(stranger), session, approval.pk, "no", htmx=True)

    late = decide(signed_in(owner), session, approval.pk, "yes", htmx=True)

    assert late.status_code == 409
    assert re.fullmatch(
        f"Already answered: Rejected by <strong>stranger</strong> at {CLOCK}.",
        late.content.decode(),
    )
    approval.refresh_from_db()
    assert (approval.state, approval.decided_by) == (Approval.State.REJECTED, stranger)


def test_without_script_the_button_redirects_to_the_card_and_a_second_press_gets_the_page(
    owner, session
):
    approval = asking(session, owner)
    client = signed_in(owner)

    first = decide(client, session, approval.pk, "yes", htmx=False)
    second = decide(client, session, approval.pk, "no", htmx=False)

    assert first.status_code == 302
    assert first["Location"] == f"/sessions/{session.pk}/#approval-{approval.pk}"
    assert second.status_code == 409
    page = second.content.decode()
    note = re.search(
        rf'id="approval-{approval.pk}-note" class="approval-note"[^>]*>(.*?)</p>', page
    )
    assert re.fullmatch(
        f"Already answered: Allowed once by <strong>owner</strong> at {CLOCK}.", note.group(1)
    )
    assert cards(page) == [(str(approval.pk), "approval--settled approval--allowed")]


def test_a_timed_out_request_is_no_longer_waiting(owner, session):
    approval = asking(session, owner)
    Approval.objects.filter(pk=approval.pk).update(state=Approval.State.TIMED_OUT, option_id="no")

    late = decide(signed_in(owner), session, approval.pk, "yes", htmx=True)

    assert late.status_code == 409
    assert late.content.decode() == "No longer waiting: No answer in 30 min: rejected."


def test_an_option_the_agent_did_not_offer_is_refused_in_the_note_with_422(owner, session):
    approval = asking(session, owner)

    response = decide(signed_in(owner), session, approval.pk, "always", htmx=True)

    assert response.status_code == 422
    assert response.content.decode() == ("Cannot answer: not one of the options the agent offered.")
    approval.refresh_from_db()
    assert approval.state == Approval.State.PENDING


def test_a_foreign_approval_is_the_same_404_as_an_unknown_session(owner, stranger, session):
    approval = asking(session, owner)
    others = SessionFactory(owner=stranger, target=session.target)
    client = signed_in(stranger)

    foreign = decide(client, session, approval.pk, "yes", htmx=True)
    through_own = decide(client, others, approval.pk, "yes", htmx=True)
    unknown = client.post("/sessions/999999/approvals/decide/", {"approval": 1, "option": "yes"})

    assert foreign.status_code == through_own.status_code == unknown.status_code == 404
    assert foreign.content == through_own.content == unknown.content
    approval.refresh_from_db()
    assert approval.state == Approval.State.PENDING
