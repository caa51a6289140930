"""The chaos stack of one test: a migrated throwaway database, the mock provider, a broker queue
of its own (Redis or RabbitMQ, whichever the settings name)."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from celery import current_app
from django.conf import settings

from devtools.testbed import throwaway_database
from kandev_web.env import env_str
from recovery.mock.testing import MockProvider, running_mock_server
from tests.chaos.stack import RETRY_DELAY_S, Chaos, manage, unacked_forget


@pytest.fixture
def chaos() -> Iterator[Chaos]:
    suffix = uuid.uuid4().hex[:6]
    queue = f"{os.environ.get('KANDEV_CELERY_QUEUE', 'kandev')}_kill_{suffix}"
    db_name = f"{os.environ.get('KANDEV_TEST_DB_NAME', 'test_kandev')}_kill"
    broker = redis.Redis.from_url(settings.REDIS["client"])
    with (
        throwaway_database(env_str("DATABASE_URL"), db_name) as database_url,
        running_mock_server() as mock_url,
        tempfile.TemporaryDirectory(prefix="kandev-chaos-") as logs,
    ):
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "REDIS_URL": env_str("REDIS_URL"),
            "KANDEV_CELERY_QUEUE": queue,
            "KANDEV_CHANNEL_PREFIX": f"kandev_chaos_{suffix}",
            "KANDEV_MOCK_PROVIDER_URL": mock_url,
            "KANDEV_RETRY_DELAYS": str(RETRY_DELAY_S),
            "KANDEV_RETRY_JITTER": "0",
            "KANDEV_SWEEP_INTERVAL": "1",
        }
        manage(env, "migrate", "--noinput", "-v", "0", timeout=180)
        try:
            yield Chaos(env, queue, database_url, MockProvider(mock_url), broker, Path(logs))
        finally:
            if settings.KANDEV_BROKER_IS_RABBITMQ:
                rabbitmq_forget(queue)
            else:
                unacked_forget(broker, queue=queue)
                broker.delete(queue, f"_kombu.binding.{queue}")
            broker.close()


def rabbitmq_forget(queue: str) -> None:
    """Delete the run's queue and its exchange, so nothing of it outlives the test."""
    with current_app.connection_for_write() as connection:
        channel = connection.default_channel
        channel.queue_delete(queue=queue)
        channel.exchange_delete(exchange=queue)
