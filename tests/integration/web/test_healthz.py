"""GET /healthz against the real Postgres, Redis and a real Celery worker."""

from __future__ import annotations

import socket

import pytest
from django.test import Client

from tests.integration.web.processes import celery_worker

pytestmark = pytest.mark.django_db


def dead_redis_url() -> str:
    """A loopback port with nothing listening (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"


@pytest.fixture
def running_worker():
    # A real worker process on its own queue, so it answers control pings and runs nothing else.
    with celery_worker(queue="kandev_web_health"):
        yield


def test_it_reports_ok_when_database_redis_and_a_worker_answer(running_worker):
    response = Client().get("/healthz")
    body = response.json()
    assert response.status_code == 200, body
    assert {k: body[k] for k in ("database", "redis", "worker")} == {
        "database": "ok",
        "redis": "ok",
        "worker": "ok",
    }


def test_it_answers_503_quickly_when_redis_is_down(settings):
    dead = dead_redis_url()
    settings.REDIS = {"client": dead, "celery": dead, "channels": dead}
    response = Client().get("/healthz")
    body = response.json()
    assert response.status_code == 503
    assert body["database"] == "ok" and body["redis"] == "down" and body["worker"] == "down"
    assert body["detail"]["worker"] == "broker unreachable"


def test_it_reports_the_worker_down_when_none_answers_the_ping():
    response = Client().get("/healthz")
    assert response.status_code == 503
    assert response.json()["worker"] == "down"
