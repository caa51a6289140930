"""A long answer streams at the provider's pace: a 5 MB answer against a 5 KB one, per character,
side by side in one run, through the real turn.

    python -m benchmarks.bench_streaming

A throwaway database and the mock provider as a subprocess; one producer process runs real turns
(`sessions_app.agent.runner.generation_run`: the guarded stream over HTTP, the coalescing writer,
the chunked transcript storage, the finish) for prompts `[[mock:bulk:N]]`: N characters in
1,000-character chunks, sent as fast as the mock can. The one 5 MB round sits between 5 KB
rounds (two before, two after), so machine load hits both sizes alike; one large round keeps
`make bench` short (it takes 15-40 s on a loaded 2-core box). Throughput is characters per
second from the answer's row appearing (its first delta) to the row being finished (all of it
stored).

Reported: both throughputs (medians) and their ratio; the target is that the 5 MB answer's
throughput per character is at least half the 5 KB one's. Storing the whole text again on every
flush made that ratio collapse with the length (issue 13: a 1,000,000-character answer had
reached 3.76 MB after 120 s). benchmarks/README.md says why.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from devtools import processes as specs
from devtools.testbed import ROOT, free_port, throwaway_database

SMALL = 5_000
LARGE = 5_000_000
# The large round between small ones: machine load hits both sizes alike.
ROUNDS = (SMALL, SMALL, LARGE, SMALL, SMALL)
# The large answer may take at most twice as long per character as the small one.
RATIO_CEILING = 2.0

PRODUCER = """
import json, os, time
from django.contrib.auth import get_user_model
from sessions_app.agent.runner import generation_run
from sessions_app.models import Message, ProviderTarget
from sessions_app.services import prompt_submit, session_create, target_create

user = get_user_model().objects.create_user("bench")
target = target_create(name="Mock", kind=ProviderTarget.Kind.MOCK)

def answer(chars, n):
    session = session_create(owner=user, target=target, title=f"Stream {n}")
    generation = prompt_submit(session=session, user=user, text=f"[[mock:bulk:{chars}]] go {n}")
    generation_run(generation_id=generation.pk)
    row = Message.objects.get(session=session, role="assistant")
    assert row.status == "complete" and len(row.full_text) == chars, (row.status, len(row.text))
    return {"chars": chars, "seconds": (row.updated_at - row.created_at).total_seconds()}

answer(1000, 0)  # warm-up, not measured: the first turn imports the provider SDK
rounds = [answer(chars, n) for n, chars in enumerate(json.loads(os.environ["BENCH_ROUNDS"]), 1)]
print(json.dumps(rounds))
"""


def run() -> list[dict]:
    from kandev_web.env import env_str

    queue = f"kbench_stream_{uuid.uuid4().hex[:8]}"
    with (
        throwaway_database(env_str("DATABASE_URL")) as database_url,
        tempfile.TemporaryDirectory(prefix="kandev-bench-stream-") as tmp,
    ):
        mock_port = free_port()
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "REDIS_URL": env_str("REDIS_URL"),
            "KANDEV_MOCK_PROVIDER_URL": f"http://127.0.0.1:{mock_port}",
            "KANDEV_CELERY_QUEUE": queue,
            "KANDEV_CHANNEL_PREFIX": f"{queue}_ch",
            "LOG_LEVEL": "WARNING",
            "BENCH_ROUNDS": json.dumps(ROUNDS),
        }
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
            cwd=ROOT, env=env, check=True, capture_output=True, timeout=300,
        )  # fmt: skip
        try:
            with specs.running(specs.mock(port=mock_port), env=env, log_path=Path(tmp) / "m.log"):
                produced = subprocess.run(
                    [sys.executable, "manage.py", "shell", "-c", PRODUCER],
                    cwd=ROOT, env=env, check=True, capture_output=True, text=True, timeout=600,
                )  # fmt: skip
        finally:
            _broker_forget(env["REDIS_URL"], queue)
    return _rows(json.loads(produced.stdout.strip().splitlines()[-1]))


def _broker_forget(redis_url: str, queue: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        client.delete(queue, f"_kombu.binding.{queue}")
    finally:
        client.close()


def _rate(rounds: list[dict], chars: int) -> float:
    return statistics.median(
        r["chars"] / max(r["seconds"], 1e-6) for r in rounds if r["chars"] == chars
    )


def _rows(rounds: list[dict]) -> list[dict]:
    small, large = _rate(rounds, SMALL), _rate(rounds, LARGE)
    ratio = small / large
    return [
        {"metric": "5 KB answer through a turn: characters per second (median)",
         "value": f"{small:,.0f}", "target": "-", "ok": None},
        {"metric": "5 MB answer through a turn: characters per second (median)",
         "value": f"{large:,.0f}", "target": "-", "ok": None},
        {"metric": "per character, 5 MB answer vs 5 KB one: time ratio",
         "value": f"{ratio:.2f}x", "target": f"<= {RATIO_CEILING:.0f}x",
         "ok": ratio <= RATIO_CEILING},
    ]  # fmt: skip


if __name__ == "__main__":
    from benchmarks.__main__ import main

    sys.exit(main(["bench_streaming"]))
