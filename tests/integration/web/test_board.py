"""The board over HTTP: tasks in columns by state with their sessions' live badges, sessions
added under an existing task, rename, archive and unarchive, search; foreign ids answer 404
exactly like unknown ones, bad input a clear 422, and nobody ever sees another user's task."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from sessions_app.models import PromptGeneration, ProviderTarget, Session, Task
from sessions_app.services import session_create
from tests.integration.web.retry_state import RETRY_AT_S, waiting_session
from tests.support.factories import ProviderTargetFactory, SessionFactory
from tests.support.session_states import session_walk_to

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def stranger_client(stranger) -> Client:
    client = Client()
    client.force_login(stranger)
    return client


def column_of(page: str, task: Task) -> str:
    """The status of the column the task's card sits in."""
    columns = re.split(r'<section class="board-column" id="column-', page)[1:]
    found = [c.split('"', 1)[0] for c in columns if f'id="task-{task.pk}"' in c]
    assert len(found) == 1, f"task {task.pk} is in {found}"
    return found[0]


def card_of(page: str, task: Task) -> str:
    start = page.index(f'id="task-{task.pk}"')
    return page[start : page.index("</article>", start)]


def test_tasks_sit_in_columns_by_the_most_urgent_state_of_their_sessions(client, owner, target):
    calm = SessionFactory(owner=owner, target=target, title="Calm")
    busy = SessionFactory(owner=owner, target=target, title="Busy")
    stuck = session_create(owner=owner, target=target, title="Stuck too", task=busy.task)
    session_walk_to(session=busy, state=Session.State.RUNNING)
    session_walk_to(session=stuck, state=Session.State.NEEDS_ATTENTION)
    session_walk_to(session=busy, state=Session.State.IDLE)  # the last write is not the verdict

    page = client.get("/").content.decode()

    assert column_of(page, calm.task) == "open"
    assert column_of(page, busy.task) == "needs_attention"
    assert ">Needs attention<" in card_of(page, busy.task) and ">Idle<" in card_of(page, busy.task)


def test_a_card_shows_queued_running_and_a_retry_countdown(client, owner, target):
    queued = SessionFactory(owner=owner, target=target, title="Waiting for a worker")
    PromptGeneration.objects.create(session=queued, number=1)
    session_walk_to(session=queued, state=Session.State.RUNNING)
    running = SessionFactory(owner=owner, target=target, title="Streaming")
    PromptGeneration.objects.create(session=running, number=1, state="running")
    session_walk_to(session=running, state=Session.State.RUNNING)
    retrying = SessionFactory(owner=owner, target=target, title="Overloaded")
    waiting_session(session=retrying)

    page = client.get("/").content.decode()

    # Queued, with its place in line (nothing ahead of it: "next").
    assert 'data-state="queued">Queued · <span class="queue-place" data-ahead="0">next</span>' in (
        card_of(page, queued.task)
    )
    assert 'data-state="running">Running<' in card_of(page, running.task)
    card = card_of(page, retrying.task)
    assert 'data-state="waiting_retry">Waiting to retry<' in card
    assert f'data-retry-at-ms="{int(RETRY_AT_S * 1000)}"' in card
    assert column_of(page, retrying.task) == "in_progress"


def test_a_new_session_can_join_an_existing_task_without_a_new_task(client, owner, target):
    first = SessionFactory(owner=owner, target=target, title="Rate limited")

    response = client.post(
        "/sessions/new/", {"title": "Rate limited", "target": target.pk, "task": first.task_id}
    )

    assert response.status_code == 302
    assert Task.objects.filter(owner=owner).count() == 1
    assert first.task.sessions.count() == 2
    assert response["Location"] == f"/sessions/{first.task.sessions.order_by('-id').first().pk}/"


def test_a_session_under_a_foreign_task_is_a_404_like_an_unknown_task(client, stranger, target):
    foreign = SessionFactory(owner=stranger, target=target, title="Not yours")

    to_foreign = client.post(
        "/sessions/new/", {"title": "Sneak in", "target": target.pk, "task": foreign.task_id}
    )
    to_unknown = client.post(
        "/sessions/new/", {"title": "Sneak in", "target": target.pk, "task": foreign.task_id + 999}
    )

    assert to_foreign.status_code == to_unknown.status_code == 404
    assert to_foreign.content == to_unknown.content
    assert foreign.task.sessions.count() == 1


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"title": "   "}, "This field is required."),
        ({"title": "x" * 201}, "at most 200 characters"),
        ({"task": "seven"}, "Enter a whole number."),
        ({"target": "999999"}, "Pick one of the listed targets."),
    ],
)
def test_bad_new_session_input_gets_a_clear_error_and_keeps_what_was_typed(
    client, owner, target, fields, message
):
    data = {"title": "Write the tests", "target": target.pk, **fields}
    response = client.post("/sessions/new/", data)

    assert response.status_code == 422
    assert message in response.content.decode()
    if fields.get("title", "").strip() and len(fields.get("title", "")) <= 200:
        assert 'value="Write the tests"' in response.content.decode()
    assert not Session.objects.filter(owner=owner).exists()


def test_rename_changes_the_title_on_the_board(client, owner, target):
    session = SessionFactory(owner=owner, target=target, title="Rate limited")

    response = client.post(f"/tasks/{session.task_id}/rename/", {"title": "  Ship the  board "})

    assert response.status_code == 302
    assert Task.objects.get(pk=session.task_id).title == "Ship the board"
    assert ">Ship the board</a>" in client.get("/").content.decode()


def test_an_empty_rename_is_refused_clearly_and_the_title_stays(client, owner, target):
    session = SessionFactory(owner=owner, target=target, title="Keep me")

    response = client.post(f"/tasks/{session.task_id}/rename/", {"title": "  "})

    assert response.status_code == 422
    assert "This field is required." in response.content.decode()
    assert Task.objects.get(pk=session.task_id).title == "Keep me"


def test_archive_takes_a_task_off_the_board_and_unarchive_brings_it_back(client, owner, target):
    session = SessionFactory(owner=owner, target=target, title="Old work")
    task = session.task

    assert client.post(f"/tasks/{task.pk}/archive/").status_code == 302
    assert f'id="task-{task.pk}"' not in client.get("/").content.decode()
    archived = client.get("/?archived=1").content.decode()
    assert f'id="task-{task.pk}"' in archived and ">Archived<" in archived
    assert client.get(f"/sessions/{session.pk}/").status_code == 200  # nothing was lost

    assert client.post(f"/tasks/{task.pk}/unarchive/").status_code == 302
    assert f'id="task-{task.pk}"' in client.get("/").content.decode()
    assert f'id="task-{task.pk}"' not in client.get("/?archived=1").content.decode()


def test_search_matches_task_and_session_titles_in_any_case(client, owner, target):
    report = SessionFactory(owner=owner, target=target, title="Quarterly report")
    other = SessionFactory(owner=owner, target=target, title="Groceries")
    session_create(owner=owner, target=target, title="Fix the CHART colours", task=other.task)

    by_task = client.get("/?q=QUARTERLY").content.decode()
    by_session = client.get("/?q=chart").content.decode()

    assert f'id="task-{report.task_id}"' in by_task and f'id="task-{other.task_id}"' not in by_task
    assert f'id="task-{other.task_id}"' in by_session
    assert f'id="task-{report.task_id}"' not in by_session
    assert "nothing matches" not in client.get("/?q=" + "z" * 500).content.decode()


@pytest.mark.parametrize("action", ["rename", "archive", "unarchive"])
def test_task_actions_on_a_foreign_task_answer_like_an_unknown_one(
    client, stranger, target, action
):
    foreign = SessionFactory(owner=stranger, target=target, title="Theirs").task

    on_foreign = client.post(f"/tasks/{foreign.pk}/{action}/", {"title": "Mine now"})
    on_unknown = client.post(f"/tasks/{foreign.pk + 999}/{action}/", {"title": "Mine now"})

    assert on_foreign.status_code == on_unknown.status_code == 404
    assert on_foreign.content == on_unknown.content
    foreign.refresh_from_db()
    assert (foreign.title, foreign.archived_at) == ("Theirs", None)
    assert client.get(f"/tasks/{foreign.pk}/").status_code == 404


def test_the_board_and_search_never_show_another_users_task(client, owner, stranger, target):
    SessionFactory(owner=owner, target=target, title="Mine")
    theirs = SessionFactory(owner=stranger, target=target, title="Mine as well")
    # Even as a member of their session, their task stays off this user's board.
    theirs.members.add(owner)

    for path in ("/", "/?q=mine", "/?archived=1"):
        page = client.get(path).content.decode()
        assert f'id="task-{theirs.task_id}"' not in page
        # Nor in the task picker (the target picker's ids may equal it: only this one counts).
        picker = re.search(r'<select name="task">(.*?)</select>', page, re.S)
        assert picker is not None
        assert f'value="{theirs.task_id}"' not in picker.group(1)


def test_the_new_session_form_preselects_the_plain_mock_target(client, owner):
    ProviderTargetFactory(name="ACP mock agent", kind=ProviderTarget.Kind.ACP, agent_kind="mock")
    mock = ProviderTargetFactory(name="Mock")

    page = client.get("/").content.decode()

    selected = re.findall(r'<option value="(\d+)" selected>', page)
    assert selected == [str(mock.pk)]
    assert page.index(">ACP mock agent<") < page.index(">Mock<")  # listed by name, Mock chosen


def test_the_session_page_lists_the_viewers_other_sessions(client, owner, stranger, target):
    here = SessionFactory(owner=owner, target=target, title="Here")
    there = SessionFactory(owner=owner, target=target, title="There")
    theirs = SessionFactory(owner=stranger, target=target, title="Theirs")

    page = client.get(f"/sessions/{here.pk}/").content.decode()
    switcher = page[page.index('id="session-switcher"') : page.index("</details>")]

    assert f'href="/sessions/{there.pk}/"' in switcher
    assert f'href="/sessions/{here.pk}/" aria-current="page"' in switcher
    assert f'href="/sessions/{theirs.pk}/"' not in switcher
