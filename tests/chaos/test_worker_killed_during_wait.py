"""A worker SIGKILLed while it holds a scheduled retry: the retry still happens, exactly once.

Real processes throughout: Celery workers and beat as subprocesses on a dedicated, migrated
database, the mock provider over HTTP, the real Redis broker. The first worker receives the retry's
eta message (kombu keeps it "unacked" in Redis) and is killed before the eta; that message is now
invisible to every other worker until the visibility timeout, long after the test. A new worker
starts, beat's sweep finds the overdue loop and re-enqueues the attempt under the same task id, and
the provider recovers. The killed worker's original message, delivered late, must do nothing.
"""

from __future__ import annotations

import signal

import pytest
from django.conf import settings

from devtools import processes
from devtools.eventually import eventually
from tests.chaos.stack import (
    SUBMIT,
    assistant_messages,
    generation_state,
    log_count,
    loop_of,
    queued_task_ids,
    shell_json,
    unacked_restore,
    unacked_tags,
    unacked_task_ids,
)
from tests.integration.web.processes import celery_worker

pytestmark = [
    pytest.mark.chaos,
    # Two workers' start-ups, a migration and a shell: over 120 s at a load of 10 on 2 cores.
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        settings.KANDEV_BROKER_IS_RABBITMQ,
        reason="Redis's visibility timeout; test_rabbitmq_redelivery.py is RabbitMQ's case",
    ),
]


def test_a_worker_killed_while_holding_a_retry_does_not_lose_it_and_it_runs_once(chaos):
    first_log, second_log = chaos.logs / "worker-1.log", chaos.logs / "worker-2.log"
    beat = processes.beat(
        schedule=str(chaos.logs / "beat-schedule"), pidfile=str(chaos.logs / "beat.pid")
    )
    with processes.running(beat, env=chaos.env, log_path=chaos.logs / "beat.log"):
        with celery_worker(queue=chaos.queue, env=chaos.env, log_path=first_log) as first:
            ids = shell_json(chaos.env, SUBMIT)
            generation_id, session_id = ids["generation_id"], ids["session_id"]
            eventually(
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
        held_by_the_dead = unacked_tags(chaos.broker, queue=chaos.queue)
        assert task_id not in queued_task_ids(chaos.broker, queue=chaos.queue)

        with celery_worker(queue=chaos.queue, env=chaos.env, log_path=second_log):
            eventually(
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
            assert task_id in unacked_restore(
                chaos.broker, queue=chaos.queue, tags=held_by_the_dead
            )
            eventually(
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
    # Shown while waiting, shown again as "Retrying now…" by the claim, gone with the answer.
    assert [kind for (kind,) in notice_events] == ["notice.upserted"] * 2 + ["notice.deleted"]
