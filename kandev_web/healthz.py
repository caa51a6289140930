"""GET /healthz: is the database, Redis and at least one Celery worker answering?

Each check has a short, hard time limit so the endpoint itself never hangs: a load balancer or
`make run` polls it. Worker liveness is a Celery control ping over the broker (Redis), so it only
runs when Redis answered; with Redis down the worker is reported down without asking Celery,
whose broker connection would otherwise retry for a long time. The ping runs in a worker thread
we stop waiting for after WORKER_TIMEOUT.
"""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from kandev_web.celery import app as celery_app

REDIS_TIMEOUT = 1.0
WORKER_PING_TIMEOUT = 1.0
WORKER_TIMEOUT = 2.0

_pool = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="healthz")


@dataclass(frozen=True, slots=True)
class Check:
    ok: bool
    detail: str

    def as_json(self) -> dict[str, str]:
        return {"status": "ok" if self.ok else "down", "detail": self.detail}


def database_check() -> Check:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as error:  # noqa: BLE001  (any failure means down; the class says why)
        return Check(False, type(error).__name__)
    return Check(True, "SELECT 1 answered")


def redis_check() -> Check:
    client = redis.Redis.from_url(
        settings.REDIS["client"],
        socket_connect_timeout=REDIS_TIMEOUT,
        socket_timeout=REDIS_TIMEOUT,
        retry_on_timeout=False,
    )
    try:
        client.ping()
    except Exception as error:  # noqa: BLE001
        return Check(False, type(error).__name__)
    finally:
        client.close()
    return Check(True, "PING answered")


def _worker_ping() -> list:
    # limit=1: one live worker is enough, so don't sit out the whole timeout collecting more.
    return celery_app.control.ping(timeout=WORKER_PING_TIMEOUT, limit=1) or []


def worker_check(*, redis_ok: bool) -> Check:
    if not redis_ok:
        return Check(False, "broker unreachable")
    future = _pool.submit(_worker_ping)
    try:
        replies = future.result(timeout=WORKER_TIMEOUT)
    except concurrent.futures.TimeoutError:
        return Check(False, "ping timed out")
    except Exception as error:  # noqa: BLE001
        return Check(False, type(error).__name__)
    if not replies:
        return Check(False, "no worker answered the ping")
    return Check(True, "a worker answered the ping")


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    database = database_check()
    broker = redis_check()
    worker = worker_check(redis_ok=broker.ok)
    checks = {"database": database, "redis": broker, "worker": worker}
    body: dict[str, object] = {name: check.as_json()["status"] for name, check in checks.items()}
    body["detail"] = {name: check.detail for name, check in checks.items()}
    healthy = all(check.ok for check in checks.values())
    return JsonResponse(body, status=200 if healthy else 503)
