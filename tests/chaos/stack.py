"""Real pieces for chaos tests: a dedicated database, Django management commands, Celery beat and
a look into the broker's bookkeeping of messages a worker holds but has not acknowledged."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from devtools.testbed import manage
from tests.integration.web.processes import ROOT, VENV_BIN, stop

# kombu's Redis transport keeps each delivered, unacknowledged message in this hash (by delivery
# tag) until the worker acks it; a SIGKILLed worker's messages stay there for visibility_timeout.
UNACKED_KEY = "unacked"
UNACKED_INDEX_KEY = "unacked_index"


def shell_json(env: dict[str, str], code: str) -> dict:
    """Run ``code`` in `manage.py shell`; its last printed line is JSON."""
    return json.loads(manage(env, "shell", "-c", code).strip().splitlines()[-1])


@contextmanager
def celery_beat(
    *, env: dict[str, str], workdir: Path, log_path: Path
) -> Iterator[subprocess.Popen]:
    """A real `celery beat` with its schedule file in ``workdir``, stopped by its pid."""
    command = [
        str(VENV_BIN / "celery"),
        "-A",
        "kandev_web",
        "beat",
        "-s",
        str(workdir / "beat-schedule"),
        "--pidfile",
        str(workdir / "beat.pid"),
        "-l",
        "INFO",
    ]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            command, cwd=ROOT, env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            yield process
        finally:
            stop(process)


def unacked_task_ids(client: redis.Redis, *, queue: str) -> set[str]:
    """Ids of tasks from ``queue`` that a worker received and has not acknowledged."""
    ids = set()
    for raw in client.hvals(UNACKED_KEY):
        message, _exchange, routing_key = json.loads(raw)
        if routing_key == queue:
            ids.add(message["headers"]["id"])
    return ids


def queued_task_ids(client: redis.Redis, *, queue: str) -> set[str]:
    """Ids of tasks waiting in ``queue`` for any worker to take them."""
    return {json.loads(raw)["headers"]["id"] for raw in client.lrange(queue, 0, -1)}


def unacked_restore(client: redis.Redis, *, queue: str) -> set[str]:
    """Put a dead worker's held messages of ``queue`` back on it, as kombu does once the
    visibility timeout passes (marked redelivered); returns their task ids."""
    restored = set()
    for tag, raw in client.hgetall(UNACKED_KEY).items():
        message, _exchange, routing_key = json.loads(raw)
        if routing_key != queue:
            continue
        message["headers"]["redelivered"] = True
        message["properties"]["delivery_info"]["redelivered"] = True
        with client.pipeline() as pipe:
            pipe.zrem(UNACKED_INDEX_KEY, tag).hdel(UNACKED_KEY, tag)
            pipe.rpush(queue, json.dumps(message))
            pipe.execute()
        restored.add(message["headers"]["id"])
    return restored


def unacked_forget(client: redis.Redis, *, queue: str) -> None:
    """Drop a dead worker's held messages of ``queue``, so no later worker restores them."""
    for tag, raw in client.hgetall(UNACKED_KEY).items():
        _message, _exchange, routing_key = json.loads(raw)
        if routing_key == queue:
            client.zrem(UNACKED_INDEX_KEY, tag)
            client.hdel(UNACKED_KEY, tag)


def log_count(path: Path, text: str) -> int:
    return path.read_text(errors="replace").count(text) if path.exists() else 0
