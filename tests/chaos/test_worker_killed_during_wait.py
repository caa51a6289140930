"""A worker SIGKILLed while it holds a scheduled retry: the retry still happens, exactly once.

Real processes throughout: Celery workers and beat as subprocesses on a dedicated, migrated
database, the mock provider over HTTP, the real Redis broker. The first worker receives the retry's
eta message (kombu keeps it "unacked" in Redis) and is killed before the eta; that message is now
invisible to every other worker until the visibility timeout, long after the test. A new worker
starts, beat's sweep finds the overdue loop and re-enqueues the attempt under the same task id, and
the provider recovers. The killed worker's original message, delivered late, must do nothing.
"""

from __future__ import annotations

import os
import signal
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
import redis
from django.conf import settings

from devtools import processes
from devtools.testbed import throwaway_database, wait_until
from kandev_web.settings import env_str
from recovery.mock.testing import MockProvider, running_mock_server
from tests.chaos.stack import (
    log_count,
    manage,
    queued_task_ids,
    shell_json,
    unacked_forget,
    unacked_restore,
    unacked_task_ids,
)
from tests.integration.web.processes import celery_worker

pytestmark = pytest.mark.chaos

RETRY_DELAY_S = 3  # the window in which the worker is killed: long enough for a busy machine

SUBMIT = """
import json
from django.contrib.auth import get_user_model
from sessions_app.models import ProviderTarget
from sessions_app.services import prompt_submit, session_create, target_create
user = get_user_model().objects.create_user("chaos")
target = target_create(name="Mock", kind=ProviderTarget.Kind.MOCK)
session = session_create(owner=user, target=target, title="Worker killed")
generation = prompt_submit(session=session, user=user, text="/overloaded:1 hi")
print(json.dumps({"session_id": session.pk, "generation_id": generation.pk}))
"""


@dataclass(frozen=True, slots=True)
class Chaos:
    env: dict[str, str]
    queue: str
    database_url: str
    mock: MockProvider
    broker: redis.Redis
    logs: Path

    def row(self, sql: str, *params) -> tuple | None:
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            return conn.execute(sql, params).fetchone()

    def rows(self, sql: str, *params) -> list[tuple]:
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            return conn.execute(sql, params).fetchall()


@pytest.fixture
def chaos() -> Iterator[Chaos]:
    suffix = uuid.uuid4().hex[:6]
    queue = f"{os.environ.get('KANDEV_CELERY_QUEUE', 'kandev')}_kill_{suffix}"
    db_name = f"{os.environ.get('KANDEV_TEST_DB_NAME', 'test_kandev')}_kill"
    broker = redis.Redis.from_url(settings.REDIS["client"])
    with (
        throwaway_database(env_str("DATABASE_URL"), db_name) as database_url,
        running_mock_server() as mock_url,
        tempfile.TemporaryDirectory(prefix="kandev-chaos-") as logs,
    ):
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "REDIS_URL": env_str("REDIS_URL"),
            "KANDEV_CELERY_QUEUE": queue,
            "KANDEV_CHANNEL_PREFIX": f"kandev_chaos_{suffix}",
            "KANDEV_MOCK_PROVIDER_URL": mock_url,
            "KANDEV_RETRY_DELAYS": str(RETRY_DELAY_S),
            "KANDEV_RETRY_JITTER": "0",
            "KANDEV_SWEEP_INTERVAL": "1",
        }
        manage(env, "migrate", "--noinput", "-v", "0", timeout=180)
        try:
            yield Chaos(env, queue, database_url, MockProvider(mock_url), broker, Path(logs))
        finally:
            unacked_forget(broker, queue=queue)
            broker.delete(queue, f"_kombu.binding.{queue}")
            broker.close()


def loop_of(chaos: Chaos, generation_id: int) -> tuple | None:
    return chaos.row(
        "SELECT id, state, attempt FROM ladder_retryloop WHERE generation_id = %s", generation_id
    )


def generation_state(chaos: Chaos, generation_id: int) -> str:
    return chaos.row(
        "SELECT state FROM sessions_app_promptgeneration WHERE id = %s", generation_id
    )[0]


def assistant_messages(chaos: Chaos, session_id: int) -> list[tuple]:
    return chaos.rows(
        "SELECT text, incomplete FROM sessions_app_message WHERE session_id = %s"
        " AND role = 'assistant'",
        session_id,
    )


def test_a_worker_killed_while_holding_a_retry_does_not_lose_it_and_it_runs_once(chaos):
    first_log, second_log = chaos.logs / "worker-1.log", chaos.logs / "worker-2.log"
    beat = processes.beat(
        schedule=str(chaos.logs / "beat-schedule"), pidfile=str(chaos.logs / "beat.pid")
    )
    with processes.running(beat, env=chaos.env, log_path=chaos.logs / "beat.log"):
        with celery_worker(queue=chaos.queue, env=chaos.env, log_path=first_log) as first:
            ids = shell_json(chaos.env, SUBMIT)
            generation_id, session_id = ids["generation_id"], ids["session_id"]
            wait_until(
                lambda: (
                    (loop := loop_of(chaos, generation_id)) is not None
                    and loop[1] == "waiting"
                    and f"kandev-retry-{loop[0]}-1"
                    in unacked_task_ids(chaos.broker, queue=chaos.queue)
                ),
                timeout=30,
                interval=0.05,
                what="the first worker holding the scheduled retry",
            )
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=10)

        loop_id, state, attempt = loop_of(chaos, generation_id)
        task_id = f"kandev-retry-{loop_id}-1"
        # Killed inside the wait: the retry had not run, and its message died with the worker.
        assert (state, attempt, chaos.mock.count()) == ("waiting", 1, 1)
        assert task_id in unacked_task_ids(chaos.broker, queue=chaos.queue)
        assert task_id not in queued_task_ids(chaos.broker, queue=chaos.queue)

        with celery_worker(queue=chaos.queue, env=chaos.env, log_path=second_log):
            wait_until(
                lambda: generation_state(chaos, generation_id) not in ("waiting_retry", "running"),
                timeout=40,
                interval=0.2,
                what="the retried generation to end",
            )
            assert generation_state(chaos, generation_id) == "succeeded"
            sweeps = log_count(second_log, f"re-enqueueing overdue attempt 1 of loop {loop_id}")
            assert sweeps >= 1  # the sweeper, not the lost message, brought the retry back

            # The killed worker's own message, redelivered late (as kombu does once the
            # visibility timeout passes): it re-checks the loop row and does nothing. Every
            # sweep enqueued one copy and one copy ran the retry, so once the redelivered
            # message is refused too, exactly `sweeps` refusals are in the log.
            refused = f"retry attempt 1 of loop {loop_id} is not due; ignored"
            assert task_id in unacked_restore(chaos.broker, queue=chaos.queue)
            wait_until(
                lambda: log_count(second_log, refused) >= sweeps,
                timeout=20,
                interval=0.1,
                what="the redelivered attempt to be refused",
            )
            assert log_count(second_log, refused) == sweeps

    requests = chaos.mock.requests()
    assert [entry["status"] for entry in requests] == [529, 200]  # the retry ran exactly once
    [(text, incomplete)] = assistant_messages(chaos, session_id)
    assert text and not incomplete
    assert chaos.row(
        "SELECT count(*) FROM ladder_retrynotice WHERE session_id = %s AND retired_at IS NULL",
        session_id,
    ) == (0,)
    assert chaos.row("SELECT state FROM ladder_retryloop WHERE id = %s", loop_id) == ("succeeded",)
    notice_events = chaos.rows(
        "SELECT type FROM sessions_app_sessionevent WHERE session_id = %s"
        " AND type LIKE 'notice.%%' ORDER BY seq",
        session_id,
    )
    assert [kind for (kind,) in notice_events] == ["notice.upserted", "notice.deleted"]
