"""Fan-out: one session streaming 2,000 deltas to 50 websocket viewers through a real Daphne and
Redis, beside raw channels-redis group_send to 50 channels as the baseline, in the same run.

    python -m benchmarks.bench_fanout

A producer process (Django, the real services) streams into a session that 50 aiohttp websocket
viewers (logged in by session cookie) watch through Daphne:

1. The product path: 2,000 deltas about 1 ms apart (faster than any model streams) through the
   real coalescer (sessions_app.agent.coalescer.StreamWriter), which persists and pushes a few
   events per second. Its throughput (deltas from the first delta to the last viewer receiving
   the last event) is compared with the baseline; p50/p99 latency runs from each event's commit
   (an on_commit hook registered before the push's) to each viewer receiving that seq. The same
   phase counts UPDATE statements on the message table: at most one per flush interval + 1.
2. The worst case, shown without a target: one persisted and pushed event per delta, unpaced.

Baseline: 2,000 group_send calls, unpaced, to a group of 50 channels read by 50 channel-layer
readers in this process; latency from send to receive.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from devtools import processes
from devtools.testbed import ROOT, free_port, manage, percentile, throwaway_database

DELTAS = 2_000
VIEWERS = 50
P99_TARGET_MS = 150.0
THROUGHPUT_TARGET = 0.8
HEADER = re.compile(rb'data-from="(\d+)" data-seq="(\d+)"')

SETUP = """
import json
from django.contrib.auth import get_user_model
from django.test import Client
from sessions_app.models import Message, ProviderTarget
from sessions_app.services import message_create, session_create, target_create
user = get_user_model().objects.create_user("bench", password="bench-pass-123")
target = target_create(name="Mock", kind=ProviderTarget.Kind.MOCK)
session = session_create(owner=user, target=target, title="Fan-out")
# A first row, so every viewer's snapshot renders (and Daphne compiles) the message template
# before the clock starts: steady state is what is measured, not a fresh process's first render.
message_create(session=session, generation=None, role=Message.Role.USER, text="Stream, please.")
client = Client()
client.force_login(user)
print(json.dumps({"session_id": session.pk, "cookie": client.cookies["sessionid"].value}))
"""

PRODUCER = """
import json, os, time
from django.conf import settings
from django.db import connection, transaction
from sessions_app.agent.coalescer import StreamWriter
from sessions_app.models import Message, PromptGeneration, Session
from sessions_app.services import message_append, message_create, message_finish

deltas, out = int(os.environ["BENCH_DELTAS"]), os.environ["BENCH_OUT"]
session = Session.objects.get(pk=int(os.environ["BENCH_SESSION"]))
# Not measured: this process's first push pays for importing and connecting the channel layer.
message_create(session=session, generation=None, role=Message.Role.USER, text="Go.")


def stamped(write, commits):
    # The stamp hook is registered before any push hook, so it runs right after the commit.
    before = session.last_seq
    with transaction.atomic():
        stamp = []
        transaction.on_commit(lambda: stamp.append(time.time()))
        write()
    for seq in range(before + 1, session.last_seq + 1):
        commits[seq] = stamp[0]


# Phase 1, the product path: deltas ~1 ms apart through the real coalescer.
updates = []
def count_updates(execute, sql, params, many, context):
    if sql.lstrip().upper().startswith("UPDATE") and '"sessions_app_message"' in sql:
        updates.append(sql)
    return execute(sql, params, many, context)

generation = PromptGeneration.objects.create(session=session, number=1, state="running")
writer = StreamWriter(session=session, generation=generation,
                      flush_interval_s=settings.KANDEV_STREAM_FLUSH_INTERVAL, clock=time)
coalesced_commits = {}
with connection.execute_wrapper(count_updates):
    started_wall, started = time.time(), time.monotonic()
    for i in range(deltas):
        stamped(lambda: writer.delta(role=Message.Role.ASSISTANT, text=f"c{i} "), coalesced_commits)
        time.sleep(0.001)
    stamped(writer.close, coalesced_commits)
    seconds = time.monotonic() - started
coalesced = {"started": started_wall, "seconds": seconds, "updates": len(updates),
             "interval": settings.KANDEV_STREAM_FLUSH_INTERVAL, "commits": coalesced_commits}

# Phase 2, the worst case: one persisted and pushed event per delta, unpaced.
message = message_create(session=session, generation=None, role=Message.Role.ASSISTANT,
                         status=Message.Status.STREAMING)
raw_commits = {}
for i in range(deltas):
    stamped(lambda: message_append(message=message, text=f"w{i} "), raw_commits)
message_finish(message=message)
with open(out, "w") as handle:
    json.dump({"coalesced": coalesced, "uncoalesced": {"commits": raw_commits}}, handle)
"""


async def _viewer(
    url: str,
    headers: dict[str, str],
    received: dict[int, float],
    ready: asyncio.Event,
    done: asyncio.Event,
    last_seq: list[int],
) -> None:
    import aiohttp

    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(url, headers=headers, max_msg_size=0) as socket,
    ):
        await socket.receive()  # the snapshot
        ready.set()
        while not (done.is_set() and last_seq and max(received, default=0) >= last_seq[0]):
            try:
                message = await asyncio.wait_for(socket.receive(), timeout=0.5)
            except TimeoutError:
                continue
            now = time.time()
            if message.type != aiohttp.WSMsgType.TEXT:
                break
            header = HEADER.search(message.data.encode()[:200])
            if header:
                for seq in range(int(header[1]), int(header[2]) + 1):
                    received.setdefault(seq, now)


async def _pipeline(base_url: str, session_id: int, cookie: str, env: dict[str, str]) -> dict:
    url = f"{base_url.replace('http', 'ws')}/ws/sessions/{session_id}/"
    headers = {"Origin": base_url, "Cookie": f"sessionid={cookie}"}
    received: list[dict[int, float]] = [{} for _ in range(VIEWERS)]
    readies = [asyncio.Event() for _ in range(VIEWERS)]
    done, last_seq = asyncio.Event(), []
    viewers = [
        asyncio.create_task(_viewer(url, headers, received[i], readies[i], done, last_seq))
        for i in range(VIEWERS)
    ]
    await asyncio.wait_for(asyncio.gather(*(r.wait() for r in readies)), timeout=120)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "producer.json"
        producer_env = {
            **env,
            "BENCH_DELTAS": str(DELTAS),
            "BENCH_OUT": str(out),
            "BENCH_SESSION": str(session_id),
        }
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            PRODUCER,
            cwd=ROOT,
            env=producer_env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        _, stderr = await process.communicate()
        if process.returncode != 0:
            raise RuntimeError(f"producer failed: {stderr.decode()[-2000:]}")
        result = json.loads(out.read_text())
    coalesced = result["coalesced"]
    raw = {int(seq): t for seq, t in result["uncoalesced"]["commits"].items()}
    last_seq.append(max(raw))
    done.set()
    await asyncio.wait_for(asyncio.gather(*viewers), timeout=300)
    product = _measure(
        received, {int(s): t for s, t in coalesced["commits"].items()}, started=coalesced["started"]
    )
    worst = _measure(received, raw, started=min(raw.values()))
    return {"product": product, "worst": worst, "coalesced": coalesced}


def _measure(
    received: list[dict[int, float]], commits: dict[int, float], *, started: float
) -> dict:
    """Latency commit->receive over every (viewer, seq); deltas/s from the first delta to the
    last viewer receiving the last event."""
    latencies = [
        (seen[seq] - t) * 1000 for seen in received for seq, t in commits.items() if seq in seen
    ]
    last_seq = max(commits)
    finished = max(seen.get(last_seq, 0.0) for seen in received)
    return {
        "deltas_per_s": DELTAS / (finished - started),
        "p50_ms": statistics.median(latencies),
        "p99_ms": percentile(latencies, 0.99),
        "delivered": len(latencies) / (len(commits) * len(received)),
        "events": len(commits),
    }


async def _baseline(redis_url: str) -> dict:
    from channels_redis.core import RedisChannelLayer

    layer = RedisChannelLayer(
        hosts=[redis_url], prefix=f"bench{uuid.uuid4().hex[:6]}", capacity=DELTAS + 100, expiry=60
    )
    channels = [await layer.new_channel() for _ in range(VIEWERS)]
    for channel in channels:
        await layer.group_add("fanout", channel)
    latencies: list[float] = []
    last_receive = [0.0]

    async def read(channel: str) -> None:
        for _ in range(DELTAS):
            message = await layer.receive(channel)
            now = time.time()
            latencies.append((now - message["t"]) * 1000)
            last_receive[0] = max(last_receive[0], now)

    readers = [asyncio.create_task(read(channel)) for channel in channels]
    started = time.time()
    for i in range(DELTAS):
        await layer.group_send("fanout", {"type": "bench", "t": time.time(), "text": f"w{i} "})
    await asyncio.wait_for(asyncio.gather(*readers), timeout=300)
    await layer.flush()
    return {
        "deltas_per_s": DELTAS / (last_receive[0] - started),
        "p50_ms": statistics.median(latencies),
        "p99_ms": percentile(latencies, 0.99),
    }


def run() -> list[dict]:
    from kandev_web.settings import env_str  # the environment, or `make run`'s services.env

    database_url, redis_url = env_str("DATABASE_URL"), env_str("REDIS_URL")
    with throwaway_database(database_url) as database_url_for_run:
        web_port = free_port()
        env = {
            **os.environ,
            "DATABASE_URL": database_url_for_run,
            "DEBUG": "false",
            "KANDEV_CHANNEL_PREFIX": f"kbench{uuid.uuid4().hex[:6]}",
        }
        manage(env, "migrate", "--noinput", "-v", "0")
        setup = json.loads(manage(env, "shell", "-c", SETUP).strip().splitlines()[-1])
        with processes.running(processes.web(port=web_port), env=env, timeout_s=90):
            base_url = f"http://127.0.0.1:{web_port}"
            baseline = asyncio.run(_baseline(redis_url))
            pipeline = asyncio.run(_pipeline(base_url, setup["session_id"], setup["cookie"], env))
    return _rows(pipeline, baseline)


def _rows(pipeline: dict, baseline: dict) -> list[dict]:
    product, worst, coalesced = pipeline["product"], pipeline["worst"], pipeline["coalesced"]
    ratio = product["deltas_per_s"] / baseline["deltas_per_s"]
    allowed = int(coalesced["seconds"] / coalesced["interval"]) + 1

    def row(metric: str, value, target: str = "-", ok: bool | None = None) -> dict:
        return {"benchmark": "fanout", "metric": metric, "value": value, "target": target, "ok": ok}

    return [
        row(
            f"pipeline deltas/s, {VIEWERS} viewers (coalesced, {product['events']} events)",
            round(product["deltas_per_s"]),
        ),
        row("baseline raw group_send deltas/s", round(baseline["deltas_per_s"])),
        row(
            "pipeline / baseline throughput",
            f"{ratio:.0%}",
            f">= {THROUGHPUT_TARGET:.0%}",
            ratio >= THROUGHPUT_TARGET,
        ),
        row("pipeline p50 persist->receive ms", round(product["p50_ms"], 1)),
        row(
            "pipeline p99 persist->receive ms",
            round(product["p99_ms"], 1),
            f"< {P99_TARGET_MS:.0f}",
            product["p99_ms"] < P99_TARGET_MS,
        ),
        row(
            "baseline p50 / p99 send->receive ms",
            f"{baseline['p50_ms']:.1f} / {baseline['p99_ms']:.1f}",
        ),
        row(
            "frames delivered (coalesced + worst case)",
            f"{min(product['delivered'], worst['delivered']):.1%}",
            "100%",
            min(product["delivered"], worst["delivered"]) >= 1.0,
        ),
        row(
            f"message UPDATEs, {DELTAS} deltas in {coalesced['seconds']:.1f}s",
            coalesced["updates"],
            f"<= {allowed}",
            coalesced["updates"] <= allowed,
        ),
        row("worst case, 1 event per delta: deltas/s", round(worst["deltas_per_s"])),
        row(
            "worst case p50 / p99 persist->receive ms",
            f"{worst['p50_ms']:.0f} / {worst['p99_ms']:.0f}",
        ),
    ]


def main() -> None:
    rows = run()
    width = max(len(r["metric"]) for r in rows)
    print(f"{'metric':<{width}}  {'value':>16}  {'target':<10} ok")
    for row in rows:
        verdict = {True: "yes", False: "NO", None: "-"}[row["ok"]]
        print(f"{row['metric']:<{width}}  {row['value']!s:>16}  {row['target']:<10} {verdict}")


if __name__ == "__main__":
    main()
