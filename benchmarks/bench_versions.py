"""What keeping versions costs a transcript write: `message_create` as it is (the row follows the
session's tail, becomes the new tail, and learns its siblings) against the write it replaced (the
row and its event, nothing else), side by side in one run.

    python -m benchmarks.bench_versions

A throwaway database; one child process (`manage.py shell`) makes WRITES rows per block through
each path, blocks alternating (ROUNDS pairs) so machine load hits both alike, each block in a
session of its own with the rows the streaming turn writes most (an assistant row after a user
row). A third path regenerates every answer once (the tail moved back, a second answer written),
so half its rows have a sibling to label: the dearest write versions add. Reported: each path's
rows per second (median of its blocks) and the ratio of the tail-following write to the plain
one.

The target is a ratio: a turn writes a handful of rows (prompt, answer, tool calls) and appends
its deltas to them, so the versions' bookkeeping (one row lock, one update, one sibling query)
may cost at most half the rows-per-second of the plain write; it must not make a write several
times dearer.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from devtools.testbed import ROOT, throwaway_database

WRITES = int(os.environ.get("BENCH_VERSIONS_WRITES", "100"))  # rows per block
ROUNDS = 5  # alternating blocks per path
RATIO_FLOOR = 0.5

CHILD = """
import json, os, time
from django.contrib.auth import get_user_model
from django.db import transaction
from sessions_app import event_types
from sessions_app.models import Message, ProviderTarget, Session
from sessions_app.selectors import message_dict
from sessions_app.services import message_create, session_create, target_create
from sessions_app.services.event_log import event_append

writes, rounds = int(os.environ["BENCH_WRITES"]), int(os.environ["BENCH_ROUNDS"])
user = get_user_model().objects.create_user("bench")
target = target_create(name="Mock", kind=ProviderTarget.Kind.MOCK)

def plain(session, role):
    # The write before versions: the row and its event in one transaction.
    with transaction.atomic():
        row = Message.objects.create(session=session, role=role, text="hello")
        event_append(session=session, type=event_types.MESSAGE_CREATED,
                     payload={"message": message_dict(row)})
    return 1

def versions(session, role):
    message_create(session=session, generation=None, role=role, text="hello")
    return 1

def regenerated(session, role):
    # Each answer is written, then regenerated once (the tail moves back to the prompt, as
    # Regenerate moves it), so the second answer has a sibling to label.
    answer = message_create(session=session, generation=None, role=role, text="hello")
    if role == "user":
        return 1
    Session.objects.filter(pk=session.pk).update(tail_id=answer.parent_id)
    message_create(session=session, generation=None, role=role, text="hello again")
    return 2

PATHS = {"plain": plain, "versions": versions, "regenerated": regenerated}

def block(name, n):
    session = session_create(owner=user, target=target, title=f"{name} {n}")
    write = PATHS[name]
    started = time.perf_counter()
    rows = sum(write(session, "user" if i % 2 == 0 else "assistant") for i in range(writes))
    return rows / (time.perf_counter() - started)

for name in PATHS:
    block(name, -1)  # warm-up: first queries, prepared plans, imports
rates = {name: [] for name in PATHS}
for n in range(rounds):
    for name in PATHS:
        rates[name].append(block(name, n))
print(json.dumps(rates))
"""


def run() -> list[dict]:
    from kandev_web.env import env_str

    with throwaway_database(env_str("DATABASE_URL")) as database_url:
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "LOG_LEVEL": "WARNING",
            "BENCH_WRITES": str(WRITES),
            "BENCH_ROUNDS": str(ROUNDS),
        }
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
            cwd=ROOT, env=env, check=True, capture_output=True, timeout=300,
        )  # fmt: skip
        produced = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", CHILD],
            cwd=ROOT, env=env, check=True, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    return _rows(json.loads(produced.stdout.strip().splitlines()[-1]))


def _rows(rates: dict[str, list[float]]) -> list[dict]:
    median = {name: statistics.median(values) for name, values in rates.items()}
    ratio = median["versions"] / median["plain"]
    return [
        {"metric": "plain write (row + event): rows/s", "value": round(median["plain"]),
         "target": "-"},
        {"metric": "write following the tail (versions): rows/s",
         "value": round(median["versions"]), "target": "-"},
        {"metric": "write after a Regenerate (a sibling to label): rows/s",
         "value": round(median["regenerated"]), "target": "-"},
        {"metric": "versions / plain rows per second", "value": round(ratio, 2),
         "target": f">= {RATIO_FLOOR}", "ok": ratio >= RATIO_FLOOR},
    ]  # fmt: skip


if __name__ == "__main__":
    for row in run():
        print(row)
