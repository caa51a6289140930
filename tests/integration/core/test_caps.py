"""Per-person caps (sessions_app/services/caps.py): sessions opened and turns started per minute,
prompts waiting to start. Each cap is enforced over the API (429, a JSON error, Retry-After) and
on the pages (a message, the typed text kept); the next minute, or a prompt that started, lets the
person go on; another person is never affected. The minute is the injected clock's."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from django.conf import settings as django_settings
from django.test import Client

from recovery.clock import FakeClock
from sessions_app.api_auth import api_token_create
from sessions_app.models import PromptGeneration, Session
from sessions_app.services import caps, generation_claim, generation_end, prompt_submit
from tests.support.factories import SessionFactory

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    """The clock every rate window reads, moved by the test."""
    fake = FakeClock()
    monkeypatch.setattr(caps, "CLOCK", fake)
    return fake


@pytest.fixture
def only(settings):
    """Switch every cap off but the ones named: only(prompts=2)."""

    def keep(*, sessions: int = 0, prompts: int = 0, queued: int = 0) -> None:
        settings.KANDEV_SESSIONS_PER_MINUTE = sessions
        settings.KANDEV_PROMPTS_PER_MINUTE = prompts
        settings.KANDEV_USER_MAX_QUEUED = queued

    return keep


def api_for(user) -> Client:
    return Client(headers={"authorization": f"Bearer {api_token_create(user=user)}"})


def post(client: Client, path: str, body: dict | None = None):
    return client.post(path, data=json.dumps(body or {}), content_type="application/json")


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def finish(generation: PromptGeneration) -> None:
    generation_end(generation=generation, state=PromptGeneration.State.STOPPED)


# ---- sessions per minute --------------------------------------------------------------------


def test_the_api_refuses_a_session_over_the_minutes_cap_with_429_and_retry_after(
    owner, target, clock, only
):
    only(sessions=3)
    api = api_for(owner)
    body = {"target": target.pk, "title": "Flood"}
    assert [post(api, "/api/v1/sessions", body).status_code for _ in range(3)] == [201] * 3
    clock.advance(20)

    refused = post(api, "/api/v1/sessions", body)

    assert refused.status_code == 429
    assert refused["Retry-After"] == "40"
    assert refused.json() == {
        "detail": "You have opened 3 sessions in the last minute, the most allowed. "
        "Try again in 40 seconds.",
        "cap": "session_rate",
        "limit": 3,
        "retry_after": 40,
    }
    assert Session.objects.filter(owner=owner).count() == 3  # nothing half-made


def test_the_next_minute_lets_the_person_open_sessions_again(owner, target, clock, only):
    only(sessions=2)
    api = api_for(owner)
    body = {"target": target.pk, "title": "Later"}
    post(api, "/api/v1/sessions", body)
    clock.advance(30)
    post(api, "/api/v1/sessions", body)
    assert post(api, "/api/v1/sessions", body).status_code == 429

    clock.advance(30)  # the first one has left the window, the second has not
    assert post(api, "/api/v1/sessions", body).status_code == 201
    assert post(api, "/api/v1/sessions", body).status_code == 429


def test_another_person_opens_sessions_while_one_is_at_the_cap(owner, stranger, target, only):
    only(sessions=1)
    body = {"target": target.pk, "title": "Mine"}
    post(api_for(owner), "/api/v1/sessions", body)
    assert post(api_for(owner), "/api/v1/sessions", body).status_code == 429

    assert post(api_for(stranger), "/api/v1/sessions", body).status_code == 201


def test_the_board_says_why_a_session_was_refused_and_keeps_the_title(owner, target, clock, only):
    only(sessions=1)
    page = logged_in(owner)
    page.post("/sessions/new/", {"title": "First", "target": target.pk})

    refused = page.post("/sessions/new/", {"title": "Second try", "target": target.pk})

    html = refused.content.decode()
    assert refused.status_code == 429 and refused["Retry-After"] == "60"
    assert "You have opened 1 sessions in the last minute, the most allowed." in html
    assert 'value="Second try"' in html
    assert list(Session.objects.filter(owner=owner).values_list("title", flat=True)) == ["First"]


# ---- prompts per minute ---------------------------------------------------------------------


def test_the_api_refuses_a_prompt_over_the_minutes_cap_and_the_next_minute_admits_it(
    owner, target, clock, only
):
    only(prompts=2)
    api = api_for(owner)
    sessions = [SessionFactory(owner=owner, target=target) for _ in range(3)]
    for session in sessions[:2]:
        assert (
            post(api, f"/api/v1/sessions/{session.pk}/prompts", {"text": "hi"}).status_code == 202
        )
    clock.advance(45.5)

    refused = post(api, f"/api/v1/sessions/{sessions[2].pk}/prompts", {"text": "hi"})

    assert refused.status_code == 429 and refused["Retry-After"] == "15"
    assert refused.json()["cap"] == "prompt_rate" and refused.json()["retry_after"] == 15
    assert refused.json()["detail"].startswith("You have sent 2 prompts in the last minute")
    assert not PromptGeneration.objects.filter(session=sessions[2]).exists()
    clock.advance(14.5)
    assert (
        post(api, f"/api/v1/sessions/{sessions[2].pk}/prompts", {"text": "hi"}).status_code == 202
    )


def test_edits_regenerates_and_resumes_count_as_prompts(owner, session, clock, only):
    only(prompts=3)
    api = api_for(owner)
    finish(prompt_submit(session=session, user=owner, text="first"))
    regenerated = post(api, f"/api/v1/sessions/{session.pk}/regenerate")
    assert regenerated.status_code == 202
    finish(PromptGeneration.objects.get(session=session, number=2))
    edited = post(api, f"/api/v1/sessions/{session.pk}/edit", {"text": "first, better"})
    assert edited.status_code == 202
    finish(PromptGeneration.objects.get(session=session, number=3))

    resumed = post(api, f"/api/v1/sessions/{session.pk}/recover", {"action": "resume"})
    regenerate_again = post(api, f"/api/v1/sessions/{session.pk}/regenerate")

    assert (resumed.status_code, resumed.json()["cap"]) == (429, "prompt_rate")
    assert regenerate_again.status_code == 429
    assert PromptGeneration.objects.filter(session=session).count() == 3


def test_the_composer_shows_the_cap_and_keeps_the_typed_prompt(owner, target, clock, only):
    only(prompts=1)
    first, second = (SessionFactory(owner=owner, target=target) for _ in range(2))
    page = logged_in(owner)
    page.post(f"/sessions/{first.pk}/prompts/", {"text": "one"}, **HTMX)

    over_htmx = page.post(f"/sessions/{second.pk}/prompts/", {"text": "two, kept"}, **HTMX)
    without_js = page.post(f"/sessions/{second.pk}/prompts/", {"text": "two, kept"})

    message = "You have sent 1 prompts in the last minute"
    assert over_htmx.status_code == 429 and over_htmx["Retry-After"] == "60"
    assert 'id="composer-error"' in over_htmx.content.decode()
    assert message in over_htmx.content.decode()
    assert without_js.status_code == 429
    assert message in without_js.content.decode()
    assert ">two, kept</textarea>" in without_js.content.decode()
    assert not PromptGeneration.objects.filter(session=second).exists()


def test_another_person_prompts_while_one_is_at_the_prompt_cap(owner, stranger, target, only):
    only(prompts=1)
    mine, other, theirs = (
        SessionFactory(owner=user, target=target) for user in (owner, owner, stranger)
    )
    prompt_submit(session=mine, user=owner, text="one")
    assert (
        post(api_for(owner), f"/api/v1/sessions/{other.pk}/prompts", {"text": "x"}).status_code
        == 429
    )

    assert (
        post(api_for(stranger), f"/api/v1/sessions/{theirs.pk}/prompts", {"text": "x"}).status_code
        == 202
    )


COUNT_ONE_PROMPT = """
import json
from sessions_app.errors import CapReached
from sessions_app.services.caps import prompt_rate_take
try:
    prompt_rate_take(user_id={user_id})
    print(json.dumps("admitted"))
except CapReached as error:
    print(json.dumps(error.cap))
"""


def other_process_starts_a_turn(user_id: int) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", COUNT_ONE_PROMPT.format(user_id=user_id)],
        cwd=django_settings.BASE_DIR, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_every_process_counts_the_same_prompts(owner, only):
    """Two Daphne processes see one count: it lives in Redis (real clocks in both)."""
    only(prompts=2)
    caps.prompt_rate_take(user_id=owner.pk)

    assert other_process_starts_a_turn(owner.pk) == "admitted"
    with pytest.raises(caps.CapReached):
        caps.prompt_rate_take(user_id=owner.pk)


def test_without_redis_the_rate_caps_admit_and_the_queued_cap_still_holds(
    owner, target, settings, only
):
    only(prompts=1, queued=1)
    settings.REDIS = {**settings.REDIS, "client": "redis://127.0.0.1:9/0"}  # nothing listens
    first, second = (SessionFactory(owner=owner, target=target) for _ in range(2))

    prompt_submit(session=first, user=owner, text="one")
    with pytest.raises(caps.CapReached) as refused:
        prompt_submit(session=second, user=owner, text="two")

    assert refused.value.cap == "queued_prompts"


# ---- prompts waiting to start ---------------------------------------------------------------


def test_a_person_with_the_most_prompts_waiting_is_refused_until_one_starts(
    owner, stranger, target, only
):
    only(queued=2)
    api = api_for(owner)
    sessions = [SessionFactory(owner=owner, target=target) for _ in range(3)]
    waiting = [prompt_submit(session=s, user=owner, text="wait") for s in sessions[:2]]

    refused = post(api, f"/api/v1/sessions/{sessions[2].pk}/prompts", {"text": "third"})

    assert refused.status_code == 429 and refused["Retry-After"] == "5"
    assert refused.json() == {
        "detail": "You already have 2 prompts waiting to start, the most allowed. "
        "Send this one when one of them has started, or stop one.",
        "cap": "queued_prompts",
        "limit": 2,
        "retry_after": 5,
    }
    theirs = SessionFactory(owner=stranger, target=target)
    assert (
        post(api_for(stranger), f"/api/v1/sessions/{theirs.pk}/prompts", {"text": "x"}).status_code
        == 202
    )

    assert generation_claim(generation_id=waiting[0].pk) is not None  # one of them started
    assert (
        post(api, f"/api/v1/sessions/{sessions[2].pk}/prompts", {"text": "third"}).status_code
        == 202
    )


def test_a_resume_waits_its_turn_behind_the_queued_cap_too(owner, target, only):
    only(queued=1)
    stuck, other = (SessionFactory(owner=owner, target=target) for _ in range(2))
    finish(prompt_submit(session=stuck, user=owner, text="first"))
    prompt_submit(session=other, user=owner, text="waiting")

    page = logged_in(owner)
    refused = page.post(f"/sessions/{stuck.pk}/recover/", {"action": "resume"}, **HTMX)

    assert refused.status_code == 429
    assert "prompts waiting to start" in refused.content.decode()
    assert PromptGeneration.objects.filter(session=stuck).count() == 1
