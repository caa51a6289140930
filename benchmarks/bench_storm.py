"""A 60 s overload storm over 50 sessions of one target, with the shared circuit and without it,
side by side in one run.

    python -m benchmarks.bench_storm
    KANDEV_BENCH_STORM_SESSIONS=10 python -m benchmarks.bench_storm     # a quick run

Time is compressed by the injected clock: a `manage.py shell` process on a throwaway database
runs every turn itself (the worker's own services: ``generation_run``, then each scheduled
``generation_retry`` in the order of its eta, the clock set to that eta), against the real mock
provider over HTTP, real Postgres and the real Redis that holds provider health. The mock fails
every model request (529) from the start of the storm until the simulated clock passes 60 s,
whatever a turn sends; then it answers. Nothing sleeps: a side takes as long as its calls and
database writes, not 60 s plus the ladder.

Both sides use the default ladder (5, 10, 20, 40, 60 s, jitter 0.2) and the same seed; the only
difference is KANDEV_CIRCUIT_ENABLED. After every step the notices of every session are counted
(a sample), and at the end the event log is replayed. benchmarks/README.md says why each target
is what it is.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
import uuid

from devtools.testbed import manage, throwaway_database
from recovery.circuit import HealthSettings
from recovery.mock.testing import running_mock_server

SESSIONS = 50
STORM_S = 60.0
# With the circuit, each open period lets one probe through where every session would have
# retried on its own: storm requests must fall to at most the retry budget's share of the
# uncontrolled ones (the default share, 20 %).
MOST_STORM_SHARE = HealthSettings().retry_ratio

DRIVER = r"""
import json, os, random, time, urllib.request
from django.conf import settings
from django.contrib.auth import get_user_model
from recovery.circuit import HealthSettings
from recovery.mock.testing import SplitClock
from sessions_app.agent.runner import generation_retry, generation_run
from sessions_app.ladder.models import RetryLoop, RetryNotice
from sessions_app.models import PromptGeneration, ProviderTarget, SessionEvent
from sessions_app.services import prompt_submit, session_create, target_create

mock = os.environ["KANDEV_MOCK_PROVIDER_URL"]
sessions_n = int(os.environ["BENCH_SESSIONS"])
storm_s = float(os.environ["BENCH_STORM_S"])

def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(mock + path, data=data, method=method,
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)

def most_notices(session_ids):
    counts = {}
    for session_id in RetryNotice.objects.live().filter(session_id__in=session_ids).values_list(
            "session_id", flat=True):
        counts[session_id] = counts.get(session_id, 0) + 1
    return max(counts.values(), default=0)

def replayed_most(session_ids):
    live, most = {}, 0
    for session_id, kind, payload in SessionEvent.objects.filter(
            session_id__in=session_ids, type__in=("notice.upserted", "notice.deleted")
    ).order_by("session_id", "seq").values_list("session_id", "type", "payload"):
        ids = live.setdefault(session_id, set())
        if kind == "notice.upserted":
            ids.add(payload["notice"]["id"])
            most = max(most, len(ids))
        else:
            ids.difference_update(payload["ids"])
    return most

def storm(name, *, circuit):
    settings.KANDEV_HEALTH = HealthSettings(enabled=circuit)
    user = get_user_model().objects.create_user(f"storm-{name}")
    target = target_create(name=f"Storm {name}", kind=ProviderTarget.Kind.MOCK)
    sessions = [session_create(owner=user, target=target, title=f"Storm {name} {i}")
                for i in range(sessions_n)]
    session_ids = [s.pk for s in sessions]
    clock, rng = SplitClock(), random.Random(2026)
    start = clock.now()
    call("POST", "/_mock/reset", {})
    call("POST", "/_mock/incident", {"seconds": 3600, "status": 529})
    storming, storm_requests, samples, most, steps = True, None, 0, 0, 0
    began = time.monotonic()
    generations = [prompt_submit(session=s, user=user, text=f"storm {name} {i}").pk
                   for i, s in enumerate(sessions)]
    for generation_id in generations:
        generation_run(generation_id=generation_id, clock=clock, rng=rng)
        samples += 1
        most = max(most, most_notices(session_ids))
    while True:
        loop = (RetryLoop.objects.filter(generation_id__in=generations,
                                         state=RetryLoop.State.WAITING)
                .order_by("next_attempt_at", "id").first())
        if loop is None:
            break
        due = max(loop.next_attempt_at.timestamp(), clock.now())
        if storming and due >= start + storm_s:
            storm_requests = len(call("GET", "/_mock/requests")["requests"])
            call("DELETE", "/_mock/incident")
            storming = False
        clock.wall.set(due)
        generation_retry(loop_id=loop.pk, attempt=loop.attempt, clock=clock, rng=rng)
        steps += 1
        samples += 1
        most = max(most, most_notices(session_ids))
    total_requests = len(call("GET", "/_mock/requests")["requests"])
    if storm_requests is None:
        storm_requests = total_requests
    states = list(PromptGeneration.objects.filter(pk__in=generations)
                  .values_list("state", flat=True))
    answers = [PromptGeneration.objects.get(pk=g).messages.filter(role="assistant").count()
               for g in generations]
    return {
        "storm_requests": storm_requests,
        "total_requests": total_requests,
        "succeeded": states.count("succeeded"),
        "states": sorted(set(states)),
        "most_notices_sampled": most,
        "samples": samples,
        "most_notices_replayed": replayed_most(session_ids),
        "notices_left": RetryNotice.objects.live().filter(session_id__in=session_ids).count(),
        "answers_min": min(answers), "answers_max": max(answers),
        "recovered_by_s": round(clock.now() - start, 1),
        "wall_s": round(time.monotonic() - began, 1),
        "steps": steps,
    }

print(json.dumps({"with": storm("circuit", circuit=True),
                  "without": storm("no-circuit", circuit=False)}))
"""

LADDER_ENV = (
    "KANDEV_RETRY_DELAYS", "KANDEV_RETRY_MAX_ATTEMPTS", "KANDEV_RETRY_JITTER",
    "KANDEV_RETRY_DEADLINE", "KANDEV_CIRCUIT_ENABLED", "KANDEV_CIRCUIT_FAILURES",
    "KANDEV_CIRCUIT_WINDOW_S", "KANDEV_CIRCUIT_OPEN_S", "KANDEV_CIRCUIT_OPEN_MAX_S",
    "KANDEV_CIRCUIT_PROBE_TIMEOUT_S", "KANDEV_RETRY_BUDGET_RATIO", "KANDEV_RETRY_BUDGET_FLOOR",
)  # fmt: skip


def run() -> list[dict]:
    from kandev_web.env import env_str

    sessions = int(os.environ.get("KANDEV_BENCH_STORM_SESSIONS") or SESSIONS)
    run_id = uuid.uuid4().hex[:8]
    queue = f"kbench_storm_{run_id}"
    with throwaway_database(env_str("DATABASE_URL")) as database_url, running_mock_server() as mock:
        env = {k: v for k, v in os.environ.items() if k not in LADDER_ENV}
        env.update(
            DATABASE_URL=database_url,
            REDIS_URL=env_str("REDIS_URL"),
            KANDEV_MOCK_PROVIDER_URL=mock,
            KANDEV_CELERY_QUEUE=queue,
            KANDEV_CHANNEL_PREFIX=f"{queue}_ch",
            LOG_LEVEL="WARNING",
            BENCH_SESSIONS=str(sessions),
            BENCH_STORM_S=str(STORM_S),
            # One account stands for the whole crowd here: its per-person caps are off.
            KANDEV_SESSIONS_PER_MINUTE="0",
            KANDEV_PROMPTS_PER_MINUTE="0",
            KANDEV_USER_MAX_QUEUED="0",
        )
        manage(env, "migrate", "--noinput", "-v", "0")
        try:
            measured = json.loads(manage(env, "shell", "-c", DRIVER, timeout=900).splitlines()[-1])
        finally:
            _forget(env_str("REDIS_URL"), queue=queue, prefix=env["KANDEV_CHANNEL_PREFIX"])
            _mock_reset(mock)
    return _rows(measured, sessions=sessions)


def _forget(redis_url: str, *, queue: str, prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        client.delete(queue, f"_kombu.binding.{queue}")
        for key in client.scan_iter(match=f"{prefix}:*"):
            client.delete(key)
    finally:
        client.close()


def _mock_reset(mock: str) -> None:
    request = urllib.request.Request(f"{mock}/_mock/reset", data=b"{}", method="POST")
    with urllib.request.urlopen(request, timeout=10):
        pass


def _rows(m: dict, *, sessions: int) -> list[dict]:
    with_, without = m["with"], m["without"]

    def row(metric: str, value, target: str = "-", ok: bool | None = None) -> dict:
        return {"benchmark": "storm", "metric": metric, "value": value, "target": target, "ok": ok}

    share = with_["storm_requests"] / max(without["storm_requests"], 1)
    rows = [
        row(
            f"provider requests during the {STORM_S:.0f} s storm, {sessions} sessions"
            " (circuit / none)",
            f"{with_['storm_requests']} / {without['storm_requests']}",
        ),
        row(
            "storm requests with the circuit as a share of without",
            f"{share:.1%}",
            f"<= {MOST_STORM_SHARE:.0%}",
            share <= MOST_STORM_SHARE,
        ),
    ]
    for name, side in (("circuit", with_), ("no circuit", without)):
        rows += [
            row(
                f"sessions recovered ({name})",
                f"{side['succeeded']}/{sessions}",
                f"{sessions}/{sessions}",
                side["succeeded"] == sessions,
            ),
            row(
                f"most notices of one session at once ({name}, {side['samples']} samples)",
                side["most_notices_sampled"],
                "1",
                side["most_notices_sampled"] == 1,
            ),
            row(
                f"most notices of one session at once ({name}, event log replay)",
                side["most_notices_replayed"],
                "1",
                side["most_notices_replayed"] == 1,
            ),
            row(
                f"answers per session min / max, notices left ({name})",
                f"{side['answers_min']} / {side['answers_max']}, {side['notices_left']}",
                "1 / 1, 0",
                side["answers_min"] == side["answers_max"] == 1 and side["notices_left"] == 0,
            ),
            row(
                f"all recovered by (simulated s) / run took (wall s) ({name})",
                f"{side['recovered_by_s']} / {side['wall_s']}",
            ),
        ]
    return rows


def main() -> int:
    from benchmarks.__main__ import Row, rows_from, table

    rows: list[Row] = rows_from(__name__, run())
    print(table(rows))
    return 1 if any(row.failed for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
