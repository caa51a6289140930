"""With RabbitMQ as the broker, a SIGKILLed worker's messages come back at once, and the ladder's
claims make that safe: a retry held by the dead worker runs exactly once without any sweeper, and
a turn it was running is not run again (no provider call repeated, nothing shown twice).

Real processes throughout: Celery workers as subprocesses on a throwaway database, the mock
provider over HTTP, the real RabbitMQ (KANDEV_BROKER_URL=amqp://...; `.ci/run` runs the chaos
suite once per broker). No beat runs here: nothing but the broker's own redelivery brings a
message back.
"""

from __future__ import annotations

import signal

import pytest
from django.conf import settings

from devtools.eventually import eventually
from sessions_app.metrics_export import queue_depth
from tests.chaos.stack import (
    SUBMIT,
    assistant_messages,
    generation_state,
    log_count,
    loop_of,
    shell_json,
)
from tests.integration.web.processes import celery_worker

pytestmark = [
    pytest.mark.chaos,
    # Two workers' start-ups, a migration and a shell: over 120 s at a load of 10 on 2 cores.
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        not settings.KANDEV_BROKER_IS_RABBITMQ, reason="RabbitMQ's redelivery (KANDEV_BROKER_URL)"
    ),
]

MID_TURN = SUBMIT.replace('"/overloaded:1 hi"', '"/stall-after-text:60000 hi"')
# Once the dead worker's connection is gone, RabbitMQ requeues its messages; on a loaded machine
# noticing the closed socket can take a moment, never anything like a visibility timeout.
REDELIVERED_WITHIN_S = 15


def received(log, task_id: str) -> bool:
    return log_count(log, f"[{task_id}] received") > 0


def test_a_retry_held_by_a_killed_worker_is_back_in_the_queue_at_once_and_runs_once(chaos):
    first_log, second_log = chaos.logs / "worker-1.log", chaos.logs / "worker-2.log"
    with celery_worker(queue=chaos.queue, env=chaos.env, log_path=first_log) as first:
        ids = shell_json(chaos.env, SUBMIT)
        generation_id, session_id = ids["generation_id"], ids["session_id"]
        eventually(
            lambda: (
                (loop := loop_of(chaos, generation_id)) is not None
                and loop[1] == "waiting"
                and received(first_log, f"kandev-retry-{loop[0]}-1")
            ),
            timeout=30,
            interval=0.05,
            what="the first worker holding the scheduled retry",
        )
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)

    loop_id, state, attempt = loop_of(chaos, generation_id)
    assert (state, attempt, chaos.mock.count()) == ("waiting", 1, 1)
    # No worker is running, no sweeper exists: the message is back only because RabbitMQ saw
    # its consumer die.
    eventually(
        lambda: queue_depth(chaos.queue) == 1,
        timeout=REDELIVERED_WITHIN_S,
        interval=0.1,
        what="the dead worker's retry message back in the queue",
    )

    with celery_worker(queue=chaos.queue, env=chaos.env, log_path=second_log):
        eventually(
            lambda: generation_state(chaos, generation_id) not in ("waiting_retry", "running"),
            timeout=40,
            interval=0.2,
            what="the retried generation to end",
        )
    assert generation_state(chaos, generation_id) == "succeeded"
    assert [entry["status"] for entry in chaos.mock.requests()] == [529, 200]
    [(text, incomplete)] = assistant_messages(chaos, session_id)
    assert text and not incomplete
    assert chaos.row("SELECT state FROM ladder_retryloop WHERE id = %s", loop_id) == ("succeeded",)
    notice_events = chaos.rows(
        "SELECT type FROM sessions_app_sessionevent WHERE session_id = %s"
        " AND type LIKE 'notice.%%' ORDER BY seq",
        session_id,
    )
    # Shown while waiting, shown again as "Retrying now…" by the claim, gone with the answer.
    assert [kind for (kind,) in notice_events] == ["notice.upserted"] * 2 + ["notice.deleted"]


def test_a_turn_whose_worker_was_killed_is_redelivered_at_once_and_its_claim_refuses_it(chaos):
    first_log, second_log = chaos.logs / "worker-1.log", chaos.logs / "worker-2.log"
    with celery_worker(queue=chaos.queue, env=chaos.env, log_path=first_log) as first:
        ids = shell_json(chaos.env, MID_TURN)
        generation_id, session_id = ids["generation_id"], ids["session_id"]
        eventually(
            lambda: len(assistant_messages(chaos, session_id)) == 1,
            timeout=60,
            interval=0.05,
            what="the first worker streaming the answer",
        )
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)

    eventually(
        lambda: queue_depth(chaos.queue) == 1,
        timeout=REDELIVERED_WITHIN_S,
        interval=0.1,
        what="the dead worker's turn back in the queue",
    )
    refused = f"generation {generation_id} not claimed: already claimed, or held in line"
    with celery_worker(queue=chaos.queue, env=chaos.env, log_path=second_log):
        eventually(
            lambda: log_count(second_log, refused) == 1,
            timeout=30,
            interval=0.1,
            what="the redelivered turn to be refused by its claim",
        )
        eventually(
            lambda: queue_depth(chaos.queue) == 0,
            timeout=10,
            interval=0.1,
            what="the refused message to be acknowledged",
        )
    # The provider was called once and its partial answer is shown once: nothing ran twice.
    assert chaos.mock.count() == 1
    assert len(assistant_messages(chaos, session_id)) == 1
    assert generation_state(chaos, generation_id) == "running"  # the reaper hands it back later
