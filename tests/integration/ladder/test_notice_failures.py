"""A retry notice that cannot be written is not worth failing the turn for (requirements AC .25).

The failure is real: a PostgreSQL trigger refuses writes to the notice table, so the savepoint, the
logged warning and the scheduled attempt are all exercised against the real database.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from django.db import connection

from recovery.mock.testing import SplitClock
from sessions_app.agent.runner import generation_retry, generation_run
from sessions_app.ladder.models import RetryLoop, RetryNotice
from sessions_app.models import PromptGeneration
from sessions_app.services import prompt_submit

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_queue")]

State = PromptGeneration.State
TABLE = RetryNotice._meta.db_table


@pytest.fixture
def clock():
    return SplitClock()


@pytest.fixture
def notices_refused() -> Iterator[None]:
    """Every INSERT and UPDATE of a retry notice raises in the database."""
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE OR REPLACE FUNCTION kandev_refuse_notice() RETURNS trigger AS $$ BEGIN "
            "RAISE EXCEPTION 'notice storage unavailable'; END $$ LANGUAGE plpgsql"
        )
    notices_refused_again()
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TRIGGER IF EXISTS kandev_refuse_notice ON {TABLE}")
            cursor.execute("DROP FUNCTION IF EXISTS kandev_refuse_notice()")


def notices_refused_again() -> None:
    """Every INSERT and UPDATE of a retry notice raises (the fixture made the function)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TRIGGER kandev_refuse_notice BEFORE INSERT OR UPDATE ON {TABLE} "
            "FOR EACH ROW EXECUTE FUNCTION kandev_refuse_notice()"
        )


def notices_allowed() -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TRIGGER IF EXISTS kandev_refuse_notice ON {TABLE}")


def run_prompt(chat, owner, text, clock):
    generation = prompt_submit(session=chat, user=owner, text=text)
    generation_run(generation_id=generation.pk, clock=clock, rng=random.Random(7))
    generation.refresh_from_db()
    return generation


def run_retry(loop, clock):
    loop.refresh_from_db()
    clock.wall.set(loop.next_attempt_at.timestamp())
    generation_retry(loop_id=loop.pk, attempt=loop.attempt, clock=clock, rng=random.Random(7))


@pytest.mark.usefixtures("notices_refused")
def test_a_notice_that_cannot_be_written_leaves_the_retry_scheduled(
    chat, owner, clock, mock_provider, caplog
):
    generation = run_prompt(chat, owner, "/overloaded:1 tell me a joke", clock)

    assert generation.state == State.WAITING_RETRY  # not failed, not left running
    loop = RetryLoop.objects.get(generation=generation)
    assert (loop.state, loop.attempt) == (RetryLoop.State.WAITING, 1)
    assert not RetryNotice.objects.exists()
    assert "writing the retry notice" in caplog.text

    run_retry(loop, clock)

    generation.refresh_from_db()
    assert generation.state == State.SUCCEEDED
    assert mock_provider.count() == 2


def test_an_existing_notice_that_cannot_be_updated_is_not_duplicated(
    chat, owner, clock, mock_provider, notices_refused
):
    notices_allowed()
    generation = run_prompt(chat, owner, "/overloaded:2 tell me a joke", clock)
    first = RetryNotice.objects.get()
    notices_refused_again()  # updates refused from here on

    run_retry(RetryLoop.objects.get(generation=generation), clock)

    generation.refresh_from_db()
    assert generation.state == State.WAITING_RETRY
    assert list(RetryNotice.objects.values_list("pk", "attempt")) == [(first.pk, 1)]


def test_a_banner_that_cannot_be_turned_to_retrying_now_does_not_stop_the_attempt(
    chat, owner, clock, mock_provider, notices_refused, caplog
):
    notices_allowed()
    generation = run_prompt(chat, owner, "/overloaded:1 tell me a joke", clock)
    assert RetryNotice.objects.live().count() == 1
    notices_refused_again()  # updates refused from here on

    run_retry(RetryLoop.objects.get(generation=generation), clock)

    generation.refresh_from_db()
    assert generation.state == State.SUCCEEDED
    assert mock_provider.count() == 2
    assert "marking the retry notice of loop" in caplog.text
