"""A real Celery worker process picks the run up from Redis and streams the answer into Postgres."""

from __future__ import annotations

import os

import pytest
from django.db import connection

from devtools.eventually import eventually
from devtools.testbed import database_url_named
from kandev_web.env import env_str
from sessions_app.models import Message, PromptGeneration
from sessions_app.services import prompt_submit
from tests.integration.web.processes import celery_worker

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def worker(celery_queue, tmp_path):
    # pytest-django's test database, on whatever server (TCP or unix socket) the suite uses.
    database_url = database_url_named(env_str("DATABASE_URL"), connection.settings_dict["NAME"])
    env = {**os.environ, "DATABASE_URL": database_url, "LOG_LEVEL": "WARNING"}
    with celery_worker(queue=celery_queue, env=env, log_path=tmp_path / "worker.log") as process:
        yield process


def test_a_submitted_prompt_is_answered_by_a_real_worker(chat, owner, worker):
    generation = prompt_submit(session=chat, user=owner, text="hello worker")

    def state() -> str:
        generation.refresh_from_db()
        return generation.state

    eventually(
        state,
        until=lambda now: now in ("succeeded", "failed", "stopped") or worker.poll() is not None,
        timeout=30,
        interval=0.1,
        what="the worker finishing the generation",
    )
    assert worker.poll() is None, "the worker exited"
    assert generation.state == PromptGeneration.State.SUCCEEDED
    answer = Message.objects.get(session=chat, role="assistant")
    assert answer.text.startswith("You asked about hello worker.")
