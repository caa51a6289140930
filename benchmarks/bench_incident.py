"""Recovery during a simulated incident: the provider overloaded for 30 s while 20 sessions send
prompts at t=0, through the real stack with the default ladder (5, 10, 20, 40, 60 s, jitter 0.2).

    python -m benchmarks.bench_incident
    KANDEV_BENCH_INCIDENT_S=8 python -m benchmarks.bench_incident     # a quick run

Subprocesses on a throwaway database: the mock provider, two Celery workers (threads pool, 8
each), Celery beat (the sweeper). A driver process warms the workers up, starts the incident on
the mock (`POST /_mock/incident`, every model request answers 529 until it ends) and submits the
20 prompts right after. Meanwhile this process samples the retry notices of every session every
100 ms; at the end the session event log is replayed to check that no `notice.upserted` ever
coexisted with another notice of its session.

Reported: provider calls per session (its attempt records: the ladder writes one per call, the
answered one included), whether they match the requests the provider saw one for one, time from
the provider's recovery to each session's answer (its generation finishing), and the most notices
any session had at once. benchmarks/README.md says why each target is what it is.
The run takes real time (incident + the ladder step that straddles its end): about 60-90 s.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import urllib.request
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from devtools import processes as specs
from devtools.eventually import eventually
from devtools.processes import ProcessSpec
from devtools.testbed import ROOT, free_port, throwaway_database
from recovery.budget import RetrySettings

SESSIONS = 20
WORKERS = 2
WORKER_THREADS = 8
SAMPLE_INTERVAL_S = 0.1
DEFAULT_INCIDENT_S = 30.0
# The default ladder the benchmark measures (LADDER_ENV below keeps overrides out).
LADDER = RetrySettings()
# The ladder's longest wait with jitter: after the provider recovers, no session should wait more
# than one (the longest) step for its next attempt.
LONGEST_STEP_S = max(LADDER.delays_s) * (1 + LADDER.jitter)
# A turn's provider calls: its first call plus at most max_attempts automatic retries.
MOST_CALLS_PER_TURN = 1 + LADDER.max_attempts
# Settings the benchmark must not inherit: it measures the default ladder and sweeper.
LADDER_ENV = (
    "KANDEV_RETRY_DELAYS",
    "KANDEV_RETRY_MAX_ATTEMPTS",
    "KANDEV_RETRY_JITTER",
    "KANDEV_RETRY_DEADLINE",
    "KANDEV_SWEEP_INTERVAL",
)
ACTIVE = ("queued", "running", "waiting_retry")
# recovery.telemetry writes this decision on the attempt record of a call that was answered.
SUCCESS_DECISION = "success"

DRIVER = """
import json, os, time, urllib.request
from django.contrib.auth import get_user_model
from devtools.eventually import eventually
from sessions_app.models import PromptGeneration, ProviderTarget
from sessions_app.services import prompt_submit, session_create, target_create

mock = os.environ["KANDEV_MOCK_PROVIDER_URL"]

def post(path, body):
    request = urllib.request.Request(mock + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)

user = get_user_model().objects.create_user("bench")
target = target_create(name="Mock", kind=ProviderTarget.Kind.MOCK)
# Warm-up (not measured): each worker's first run pays for importing the provider SDKs.
warm = [prompt_submit(session=session_create(owner=user, target=target, title=f"Warm {i}"),
                      user=user, text=f"warm up {i}") for i in range(4)]
eventually(lambda: not PromptGeneration.objects.filter(
               pk__in=[g.pk for g in warm], state__in=PromptGeneration.ACTIVE_STATES).exists(),
           timeout=120, what="the warm-up prompts", interval=0.1)
sessions = [session_create(owner=user, target=target, title=f"Incident {i}")
            for i in range(int(os.environ["BENCH_SESSIONS"]))]
post("/_mock/reset", {})
seconds = float(os.environ["BENCH_INCIDENT_S"])
incident = post("/_mock/incident", {"seconds": seconds, "status": 529})
recovers_at = time.time() + incident["incident"]["remaining_s"]
submitted_at = time.time()
generations = {s.pk: prompt_submit(session=s, user=user, text="hello").pk for s in sessions}
print(json.dumps({"recovers_at": recovers_at, "submitted_at": submitted_at,
                  "generations": generations}))
"""


class _Processes:
    """Subprocesses, each in its own process group, all stopped (group by group) on exit."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env, self.logs = env, logs
        self.started: list[tuple[str, subprocess.Popen]] = []

    def spawn(self, spec: ProcessSpec) -> tuple[subprocess.Popen, Path]:
        log = self.logs / f"{spec.name}.log"
        process = specs.start(spec, env=self.env, log_path=log)
        self.started.append((spec.name, process))
        return process, log

    def check_alive(self) -> None:
        dead = [name for name, process in self.started if process.poll() is not None]
        if dead:
            raise RuntimeError(f"{', '.join(dead)} exited early; logs in {self.logs}")

    def stop_all(self) -> None:
        for _, process in reversed(self.started):
            _signal_group(process, signal.SIGTERM)
        for _, process in reversed(self.started):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait(timeout=5)


def _signal_group(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)  # the group id is the leader's pid (start_new_session)
    except ProcessLookupError:
        pass


@dataclass
class _Samples:
    """What the sampler saw: the most notices per session at once, and how many were waiting."""

    count: int = 0
    most_per_session: int = 0
    most_sessions_waiting: int = 0
    stop: threading.Event = field(default_factory=threading.Event)


def _sample(database_url: str, samples: _Samples) -> None:
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as conn:
        while not samples.stop.is_set():
            counts = conn.execute(
                "SELECT session_id, count(*) FROM ladder_retrynotice WHERE retired_at IS NULL"
                " GROUP BY session_id"
            ).fetchall()
            samples.count += 1
            samples.most_per_session = max(
                samples.most_per_session, max((n for _, n in counts), default=0)
            )
            samples.most_sessions_waiting = max(samples.most_sessions_waiting, len(counts))
            samples.stop.wait(SAMPLE_INTERVAL_S)


def _event_log_most_notices(conn) -> int:
    """Replay every session's notice events: the most notices live right after any upsert."""
    live: dict[int, set[int]] = defaultdict(set)
    most = 0
    rows = conn.execute(
        "SELECT session_id, type, payload FROM sessions_app_sessionevent"
        " WHERE type IN ('notice.upserted', 'notice.deleted') ORDER BY session_id, seq"
    ).fetchall()
    for session_id, kind, payload in rows:
        if kind == "notice.upserted":
            live[session_id].add(payload["notice"]["id"])
            most = max(most, len(live[session_id]))
        else:
            live[session_id].difference_update(payload["ids"])
    return most


def _stack_env(*, database_url: str, mock_url: str, queue: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in LADDER_ENV}
    from kandev_web.env import env_str  # the environment, or `make run`'s services.env

    env.update(
        DATABASE_URL=database_url,
        REDIS_URL=env_str("REDIS_URL"),
        KANDEV_MOCK_PROVIDER_URL=mock_url,
        KANDEV_CELERY_QUEUE=queue,
        KANDEV_CHANNEL_PREFIX=f"{queue}_ch",
        DEBUG="false",
        LOG_LEVEL="WARNING",
        # One account stands for the whole crowd here: its per-person caps are off.
        KANDEV_SESSIONS_PER_MINUTE="0",
        KANDEV_PROMPTS_PER_MINUTE="0",
        KANDEV_USER_MAX_QUEUED="0",
    )
    return env


def _start_stack(processes: _Processes, *, mock_port: int, queue: str, logs: Path) -> None:
    mock = specs.mock(port=mock_port)
    workers = [
        specs.worker(
            concurrency=WORKER_THREADS, pool="threads", queue=queue, node=f"{queue}-{i}@localhost",
            name=f"worker-{i}",
        )
        for i in range(WORKERS)
    ]  # fmt: skip
    beat = specs.beat(schedule=str(logs / "beat-schedule"), pidfile=str(logs / "beat.pid"))
    started = [(spec, *processes.spawn(spec)) for spec in (mock, *workers, beat)]
    for spec, process, log in started:
        specs.wait_ready(spec, process, log_path=log, timeout_s=90)


def _measure(*, database_url: str, mock_url: str, driver: dict, samples: _Samples) -> dict:
    import psycopg

    generations = {int(s): g for s, g in driver["generations"].items()}
    with psycopg.connect(database_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT g.session_id, g.state, g.finished_at,"
            " (SELECT count(*) FROM ladder_attemptrecord a WHERE a.generation_id = g.id),"
            " (SELECT count(*) FROM ladder_attemptrecord a"
            "   WHERE a.generation_id = g.id AND a.decision = %s),"
            " (SELECT count(*) FROM sessions_app_message m"
            "   WHERE m.generation_id = g.id AND m.role = 'assistant')"
            " FROM sessions_app_promptgeneration g WHERE g.id = ANY(%s)",
            (SUCCESS_DECISION, list(generations.values())),
        ).fetchall()
        notices_left = conn.execute(
            "SELECT count(*) FROM ladder_retrynotice WHERE retired_at IS NULL"
        ).fetchone()[0]
        event_log_most = _event_log_most_notices(conn)
    with urllib.request.urlopen(f"{mock_url}/_mock/requests", timeout=10) as response:
        requests = json.load(response)["requests"]
    succeeded = [row for row in rows if row[1] == "succeeded"]
    # The ladder records every provider call, the answered one included (decision "success"),
    # so a generation's attempt records are its attempts: nothing is added for the success.
    attempts = [row[3] for row in rows]
    recovery_to_answer = [row[2].timestamp() - driver["recovers_at"] for row in succeeded]
    return {
        "succeeded": len(succeeded),
        "states": sorted({row[1] for row in rows}),
        "attempts": attempts,
        "recorded_successes": sum(row[4] for row in rows),
        "answers_per_session": [row[5] for row in rows],
        "recovery_to_answer": recovery_to_answer,
        "requests": len(requests),
        "incident_requests": sum(1 for r in requests if r.get("incident")),
        "answered_requests": sum(1 for r in requests if r.get("status") == 200),
        "notices_left": notices_left,
        "event_log_most": event_log_most,
        "sampled_most": samples.most_per_session,
        "samples": samples.count,
        "most_waiting": samples.most_sessions_waiting,
    }


def run() -> list[dict]:
    from kandev_web.env import env_str

    incident_s = float(os.environ.get("KANDEV_BENCH_INCIDENT_S") or DEFAULT_INCIDENT_S)
    queue = f"kbench_incident_{uuid.uuid4().hex[:8]}"
    mock_port = free_port()
    mock_url = f"http://127.0.0.1:{mock_port}"
    with (
        throwaway_database(env_str("DATABASE_URL")) as database_url,
        tempfile.TemporaryDirectory(prefix="kandev-bench-incident-") as tmp,
    ):
        logs = Path(tmp)
        env = _stack_env(database_url=database_url, mock_url=mock_url, queue=queue)
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            timeout=300,
        )
        processes = _Processes(env, logs)
        samples = _Samples()
        sampler = threading.Thread(target=_sample, args=(database_url, samples), daemon=True)
        try:
            _start_stack(processes, mock_port=mock_port, queue=queue, logs=logs)
            sampler.start()
            driver = json.loads(
                subprocess.run(
                    [sys.executable, "manage.py", "shell", "-c", DRIVER],
                    cwd=ROOT,
                    env={
                        **env,
                        "BENCH_SESSIONS": str(SESSIONS),
                        "BENCH_INCIDENT_S": str(incident_s),
                    },
                    check=True,
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                .stdout.strip()
                .splitlines()[-1]
            )
            _wait_foranswers(database_url, driver, processes, incident_s=incident_s)
            samples.stop.set()
            sampler.join(timeout=5)
            measured = _measure(
                database_url=database_url, mock_url=mock_url, driver=driver, samples=samples
            )
        except Exception:
            _print_log_tails(logs)
            raise
        finally:
            samples.stop.set()
            processes.stop_all()
            _broker_forget(env_str("REDIS_URL"), queue)
    return _rows(measured, incident_s=incident_s)


def _wait_foranswers(
    database_url: str, driver: dict, processes: _Processes, *, incident_s: float
) -> None:
    import psycopg

    ids = list(driver["generations"].values())
    with psycopg.connect(database_url, autocommit=True) as conn:

        def settled() -> bool:
            processes.check_alive()
            return not conn.execute(
                "SELECT count(*) FROM sessions_app_promptgeneration"
                " WHERE id = ANY(%s) AND state = ANY(%s)",
                (ids, list(ACTIVE)),
            ).fetchone()[0]

        # The ladder's deadline (150 s) bounds every turn; beyond it something is stuck.
        eventually(settled, timeout=incident_s + 200, what="every session's answer", interval=0.25)


def _broker_forget(redis_url: str, queue: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        client.delete(queue, f"_kombu.binding.{queue}")
    finally:
        client.close()


def _print_log_tails(logs: Path) -> None:
    for log in sorted(logs.glob("*.log")):
        tail = log.read_text(errors="replace").splitlines()[-15:]
        print(f"--- {log.name} ---", *tail, sep="\n", file=sys.stderr)


def _rows(m: dict, *, incident_s: float) -> list[dict]:
    def row(metric: str, value, target: str = "-", ok: bool | None = None) -> dict:
        return {
            "benchmark": "incident",
            "metric": metric,
            "value": value,
            "target": target,
            "ok": ok,
        }

    attempts, waits = m["attempts"], m["recovery_to_answer"]
    answers = m["answers_per_session"]
    return [
        row(
            f"sessions answered after a {incident_s:.0f} s overload",
            f"{m['succeeded']}/{SESSIONS}",
            f"{SESSIONS}/{SESSIONS}",
            m["succeeded"] == SESSIONS,
        ),
        row(
            "provider calls per session, from attempt records (mean / max)",
            f"{statistics.mean(attempts):.2f} / {max(attempts)}",
            f"max <= {MOST_CALLS_PER_TURN}",
            max(attempts) <= MOST_CALLS_PER_TURN,
        ),
        row(
            "provider requests vs attempt records (failed + answered)",
            f"{m['incident_requests']} + {m['answered_requests']} vs"
            f" {sum(attempts) - m['recorded_successes']} + {m['recorded_successes']}",
            "equal, and no other requests",
            _requests_match_records(m, recorded=sum(attempts)),
        ),
        row("recovery -> answer p50 s", round(statistics.median(waits), 2) if waits else "n/a"),
        row(
            "recovery -> answer max s",
            round(max(waits), 2) if waits else "n/a",
            f"<= {LONGEST_STEP_S:.0f}",
            bool(waits) and max(waits) <= LONGEST_STEP_S,
        ),
        row(
            f"most notices of one session at once ({m['samples']} samples, 100 ms)",
            m["sampled_most"],
            "1",
            m["sampled_most"] == 1,
        ),
        row(
            "most notices of one session at once (event log replay)",
            m["event_log_most"],
            "1",
            m["event_log_most"] == 1,
        ),
        row("sessions showing a retry banner at once (peak)", m["most_waiting"]),
        row(
            "assistant answers per session (min / max)",
            f"{min(answers)} / {max(answers)}",
            "1 / 1",
            min(answers) == max(answers) == 1,
        ),
        row("notices left after recovery", m["notices_left"], "0", m["notices_left"] == 0),
    ]


def _requests_match_records(m: dict, *, recorded: int) -> bool:
    """Every request the mock saw has exactly one attempt record, failures and answers alike."""
    recorded_failures = recorded - m["recorded_successes"]
    return (
        m["requests"] == m["incident_requests"] + m["answered_requests"]
        and m["incident_requests"] == recorded_failures
        and m["answered_requests"] == m["recorded_successes"]
    )


def main() -> int:
    from benchmarks.__main__ import Row, rows_from, table

    rows: list[Row] = rows_from(__name__, run())
    print(table(rows))
    return 1 if any(row.failed for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
