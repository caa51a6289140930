"""One person floods the box, another person's prompt still starts: the per-person caps
(sessions_app/services/caps.py) at their defaults, through the real stack.

    python -m benchmarks.bench_caps

Subprocesses on a throwaway database: the mock provider, one Celery worker and Daphne. The
flooder, with an API token, asks for FLOOD_SESSIONS sessions at once (POST /api/v1/sessions),
then on every session it got sends prompts as fast as it can, stopping each accepted one at once
so the next is not refused as "already running" (the attack that got 60 prompts through in
1.2 s), and leaves a long prompt (`[[mock:ping-stall:20000]]`) on each at the end, so its turns
hold the worker while its queued ones wait. Meanwhile another person sends OTHER_PROMPTS prompts
over the API, spread over the flood; each one's wait is from its POST to the mock provider
receiving its first request. A sampler reads the flooder's queued prompts every 50 ms.

Reported: sessions and turns the flooder got (against the caps), every refusal a 429 with
Retry-After, the flooder's most prompts waiting at once, and the other person's wait.
benchmarks/README.md says why each target is what it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from devtools import processes as specs
from devtools.eventually import eventually
from devtools.testbed import ROOT, free_port, throwaway_database

FLOOD_SESSIONS = 60
# Prompt, stop, prompt again, on every session at once: far more than the cap lets through.
FLOOD_ROUNDS = 5
OTHER_PROMPTS = 5
OTHER_EVERY_S = 0.4
LONG_PROMPT = "[[mock:ping-stall:20000]] flood {n}"
# The defaults in kandev_web/settings.py, set here too so a tuned environment cannot move them.
SESSIONS_PER_MINUTE, PROMPTS_PER_MINUTE, MAX_QUEUED = 20, 30, 10
WAIT_TARGET_S = 1.0
SAMPLE_INTERVAL_S = 0.05

SETUP = """
import json, os
from django.contrib.auth import get_user_model
from sessions_app.api_auth import api_token_create
from sessions_app.models import ProviderTarget
from sessions_app.services import session_create, target_create
User = get_user_model()
target = target_create(name="Mock", kind=ProviderTarget.Kind.MOCK)
flooder, other = User.objects.create_user("flooder"), User.objects.create_user("other")
print(json.dumps({
    "target": target.pk, "flooder": flooder.pk,
    "flooder_token": api_token_create(user=flooder, label="bench"),
    "other_token": api_token_create(user=other, label="bench"),
    "other_sessions": [session_create(owner=other, target=target, title=f"Other {n}").pk
                       for n in range(int(os.environ["BENCH_OTHER_SESSIONS"]))],
}))
"""


@dataclass
class _Flood:
    statuses: Counter = field(default_factory=Counter)
    caps: Counter = field(default_factory=Counter)
    without_retry_after: int = 0
    sessions: list[int] = field(default_factory=list)
    turns_accepted: int = 0
    turns_asked: int = 0

    def refused(self, status: int, body: dict, headers) -> None:
        """A refusal: a cap's 429 (counted by cap), or a 409 for a session whose stopped turn
        had not ended yet (the flood's own haste, not a cap)."""
        self.statuses[status] += 1
        if status == 429:
            self.caps[body.get("cap", "?")] += 1
            if not headers.get("Retry-After"):
                self.without_retry_after += 1


@dataclass
class _Samples:
    most_queued: int = 0
    stop: threading.Event = field(default_factory=threading.Event)


def _sample(database_url: str, flooder: int, samples: _Samples) -> None:
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as conn:
        while not samples.stop.is_set():
            (queued,) = conn.execute(
                "SELECT count(*) FROM sessions_app_promptgeneration"
                " WHERE requested_by_id = %s AND state = 'queued'",
                (flooder,),
            ).fetchone()
            samples.most_queued = max(samples.most_queued, queued)
            samples.stop.wait(SAMPLE_INTERVAL_S)


async def _flood(http, base_url: str, token: str, target: int, flood: _Flood) -> None:
    headers = {"Authorization": f"Bearer {token}"}

    async def open_session(n: int) -> None:
        body = {"target": target, "title": f"Flood {n}"}
        async with http.post(f"{base_url}/api/v1/sessions", json=body, headers=headers) as answer:
            data = await answer.json()
            if answer.status == 201:
                flood.sessions.append(data["id"])
            else:
                flood.refused(answer.status, data, answer.headers)

    async def prompt(session_id: int, text: str) -> bool:
        url = f"{base_url}/api/v1/sessions/{session_id}/prompts"
        flood.turns_asked += 1
        async with http.post(url, json={"text": text}, headers=headers) as answer:
            data = await answer.json()
            if answer.status == 202:
                flood.turns_accepted += 1
                return True
            flood.refused(answer.status, data, answer.headers)
            return False

    async def churn(session_id: int) -> None:
        for n in range(FLOOD_ROUNDS):
            if await prompt(session_id, f"flood {n}"):
                stop = f"{base_url}/api/v1/sessions/{session_id}/stop"
                async with http.post(stop, headers=headers) as answer:
                    await answer.read()
        await prompt(session_id, LONG_PROMPT.format(n=session_id))

    await asyncio.gather(*(open_session(n) for n in range(FLOOD_SESSIONS)))
    await asyncio.gather(*(churn(session_id) for session_id in flood.sessions))


async def _others(http, base_url: str, token: str, sessions: list[int]) -> list[dict]:
    headers = {"Authorization": f"Bearer {token}"}
    sent = []
    for n, session_id in enumerate(sessions):
        # Pacing, not a poll: the other person's prompts are spread over the flood.
        await asyncio.sleep(OTHER_EVERY_S if n else 0.1)
        submitted = time.time()
        url = f"{base_url}/api/v1/sessions/{session_id}/prompts"
        async with http.post(url, json={"text": f"hello {n}"}, headers=headers) as answer:
            body = await answer.text()
            if answer.status != 202:
                raise RuntimeError(f"the other person was refused: {answer.status} {body[:200]}")
        sent.append({"session": session_id, "submitted": submitted, "answered": time.time()})
    return sent


def _first_requests(mock_url: str) -> dict[str, float]:
    with urllib.request.urlopen(f"{mock_url}/_mock/requests", timeout=30) as response:
        requests = json.load(response)["requests"]
    first: dict[str, float] = {}
    for request in requests:
        first.setdefault(request.get("conversation", ""), request["received_at"])
    return first


def _waits(mock_url: str, sent: list[dict], *, timeout: float = 30) -> list[float]:
    """Each prompt's wait to its first provider request (the mock names the conversation
    session-<id>, MOCK_CONVERSATION_PATH in sessions_app/agent/targets.py)."""

    def received() -> list[float | None]:
        first = _first_requests(mock_url)
        return [first.get(f"session-{job['session']}") for job in sent]

    # A prompt that never reached the provider is a result (an infinite wait), not a failure.
    with contextlib.suppress(AssertionError):
        eventually(
            received,
            until=lambda got: all(r is not None for r in got),
            timeout=timeout,
            what="every prompt's first provider request",
            interval=0.2,
        )
    return [
        float("inf") if r is None else r - job["submitted"]
        for r, job in zip(received(), sent, strict=True)
    ]


async def _measure(base_url: str, mock_url: str, setup: dict) -> tuple[_Flood, list[dict]]:
    import aiohttp

    flood = _Flood()
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as http:
        # Warm-up, not measured: the worker's first turn pays for importing the provider SDK.
        *measured, warm = setup["other_sessions"]
        sent = await _others(http, base_url, setup["other_token"], [warm])
        await asyncio.to_thread(_waits, mock_url, sent)
        await asyncio.sleep(0.5)
        _, sent = await asyncio.gather(
            _flood(http, base_url, setup["flooder_token"], setup["target"], flood),
            _others(http, base_url, setup["other_token"], measured),
        )
    return flood, sent


def run() -> list[dict]:
    from kandev_web.env import env_str

    queue = f"kbench_caps_{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "REDIS_URL": env_str("REDIS_URL"),
        "KANDEV_CELERY_QUEUE": queue,
        "KANDEV_CHANNEL_PREFIX": f"{queue}_ch",
        "KANDEV_SESSIONS_PER_MINUTE": str(SESSIONS_PER_MINUTE),
        "KANDEV_PROMPTS_PER_MINUTE": str(PROMPTS_PER_MINUTE),
        "KANDEV_USER_MAX_QUEUED": str(MAX_QUEUED),
        "DEBUG": "false",
        "LOG_LEVEL": "WARNING",
    }
    started = []
    samples = _Samples()
    with (
        throwaway_database(env_str("DATABASE_URL")) as database_url,
        tempfile.TemporaryDirectory(prefix="kandev-bench-caps-") as tmp,
    ):
        env["DATABASE_URL"] = database_url
        logs = Path(os.environ.get("KANDEV_BENCH_LOGS") or tmp)
        logs.mkdir(parents=True, exist_ok=True)
        mock_port, web_port = free_port(), free_port()
        mock_url, base_url = f"http://127.0.0.1:{mock_port}", f"http://127.0.0.1:{web_port}"
        env["KANDEV_MOCK_PROVIDER_URL"] = mock_url
        try:
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
                cwd=ROOT, env=env, check=True, capture_output=True, timeout=300,
            )  # fmt: skip
            setup = json.loads(
                subprocess.run(
                    [sys.executable, "manage.py", "shell", "-c", SETUP],
                    cwd=ROOT, env={**env, "BENCH_OTHER_SESSIONS": str(OTHER_PROMPTS + 1)},
                    check=True, capture_output=True, text=True, timeout=300,
                ).stdout.strip().splitlines()[-1]
            )  # fmt: skip
            stack = (
                specs.mock(port=mock_port),
                specs.worker(concurrency=32, queue=queue, node="caps@%h"),
                specs.web(port=web_port),
            )
            # Started together, then waited for: each start is mostly importing Django.
            for spec in stack:
                started.append(specs.start(spec, env=env, log_path=logs / f"{spec.name}.log"))
            for spec, process in zip(stack, started, strict=True):
                specs.wait_ready(spec, process, log_path=logs / f"{spec.name}.log", timeout_s=120)
            sampler = threading.Thread(
                target=_sample, args=(database_url, setup["flooder"], samples), daemon=True
            )
            sampler.start()
            began = time.monotonic()
            flood, sent = asyncio.run(_measure(base_url, mock_url, setup))
            waits = _waits(mock_url, sent)
            answers = [job["answered"] - job["submitted"] for job in sent]
            flood_s = time.monotonic() - began
        except Exception:
            for log in sorted(logs.glob("*.log")):
                print(f"--- {log.name}\n" + "\n".join(log.read_text().splitlines()[-30:]),
                      file=sys.stderr)  # fmt: skip
            raise
        finally:
            samples.stop.set()
            for process in reversed(started):
                specs.stop(process)
            _broker_forget(env["REDIS_URL"], queue)
    return _rows(flood, waits, answers, samples, flood_s)


def _broker_forget(redis_url: str, queue: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        client.delete(queue, f"_kombu.binding.{queue}")
    finally:
        client.close()


def _rows(
    flood: _Flood, waits: list[float], answers: list[float], samples: _Samples, flood_s: float
) -> list[dict]:
    limited = flood.statuses[429]
    busy = flood.statuses[409]
    other = {status: n for status, n in flood.statuses.items() if status not in (409, 429)}
    caps = ", ".join(f"{cap} {n}" for cap, n in sorted(flood.caps.items()))
    return [
        {"metric": f"one person floods: sessions opened of {FLOOD_SESSIONS} asked at once",
         "value": len(flood.sessions), "target": f"<= {SESSIONS_PER_MINUTE} (a minute's cap)",
         "ok": 0 < len(flood.sessions) <= SESSIONS_PER_MINUTE},
        {"metric": "one person floods: turns started (prompt, stop, prompt again)",
         "value": f"{flood.turns_accepted} of {flood.turns_asked} asked",
         "target": f"<= {PROMPTS_PER_MINUTE} (a minute's cap)",
         "ok": 0 < flood.turns_accepted <= PROMPTS_PER_MINUTE},
        {"metric": "one person floods: cap refusals (429) with Retry-After",
         "value": f"{limited - flood.without_retry_after} of {limited} ({caps}; besides, 409"
                  f" still running: {busy}{'; other ' + str(other) if other else ''})",
         "target": "all", "ok": limited > 0 and not other and not flood.without_retry_after},
        {"metric": "one person floods: most of their prompts waiting to start (sampled)",
         "value": samples.most_queued, "target": f"<= {MAX_QUEUED}",
         "ok": samples.most_queued <= MAX_QUEUED},
        {"metric": f"another person's prompt while one floods: wait to first provider request"
                   f" (max of {len(waits)})",
         "value": f"{max(waits):.2f} s (each: {', '.join(f'{w:.2f}' for w in waits)};"
                  f" the run took {flood_s:.1f} s)",
         "target": f"< {WAIT_TARGET_S:.0f} s", "ok": max(waits) < WAIT_TARGET_S},
        {"metric": "another person's prompt while one floods: of that, until the POST's 202",
         "value": ", ".join(f"{a:.2f}" for a in answers) + " s", "target": "-", "ok": None},
    ]  # fmt: skip


def main() -> int:
    from benchmarks.__main__ import main as bench_main

    return bench_main(["bench_caps"])


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kandev_web.settings")
    sys.exit(main())
