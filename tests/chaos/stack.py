"""Real pieces for chaos tests: Django management commands and a look into the broker's
bookkeeping of messages a worker holds but has not acknowledged. The processes themselves come
from devtools/processes.py."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import psycopg
import redis

from devtools.testbed import manage
from recovery.mock.testing import MockProvider

# kombu's Redis transport keeps each delivered, unacknowledged message in this hash (by delivery
# tag) until the worker acks it; a SIGKILLed worker's messages stay there for visibility_timeout.
UNACKED_KEY = "unacked"
UNACKED_INDEX_KEY = "unacked_index"


def shell_json(env: dict[str, str], code: str) -> dict:
    """Run ``code`` in `manage.py shell`; its last printed line is JSON."""
    return json.loads(manage(env, "shell", "-c", code).strip().splitlines()[-1])


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


def unacked_tags(client: redis.Redis, *, queue: str) -> set[str]:
    """Delivery tags of the messages of ``queue`` held unacknowledged right now."""
    return {
        tag.decode() if isinstance(tag, bytes) else tag
        for tag, raw in client.hgetall(UNACKED_KEY).items()
        if json.loads(raw)[2] == queue
    }


def unacked_restore(client: redis.Redis, *, queue: str, tags: set[str]) -> set[str]:
    """Put a dead worker's held messages of ``queue`` (its delivery ``tags``, taken when it died)
    back on it, as kombu does once the visibility timeout passes (marked redelivered); returns
    their task ids. A live worker's own in-flight messages are left alone: restoring those too
    would deliver them a second time."""
    restored = set()
    for tag, raw in client.hgetall(UNACKED_KEY).items():
        message, _exchange, routing_key = json.loads(raw)
        name = tag.decode() if isinstance(tag, bytes) else tag
        if routing_key != queue or name not in tags:
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


# The window in which the worker is killed. `manage.py shell` submitting the prompt must also have
# exited inside it: at a load of 10 on 2 cores that took over 3 s, so the retry had run already.
RETRY_DELAY_S = 8

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
