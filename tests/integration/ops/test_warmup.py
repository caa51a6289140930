"""Start-up warm-up: Daphne loads the broker transport and opens its pooled connection while
starting, so the first prompt's send_task costs what later ones do; a broker that is down is a
warning, never a failed start."""

from __future__ import annotations

import logging

import redis
from celery import Celery
from django.conf import settings

from devtools.testbed import free_port
from kandev_web.warmup import broker_warm_up


def test_it_leaves_a_live_broker_connection_in_the_pool_for_the_first_send():
    app = Celery("warm-up-test", broker=settings.CELERY_BROKER_URL)
    assert broker_warm_up(app) is True
    queue = f"{settings.CELERY_TASK_DEFAULT_QUEUE}_warmup_probe"
    client = redis.Redis.from_url(settings.REDIS["client"])
    try:
        with app.producer_or_acquire() as producer:
            # The pooled connection the first send_task will get is already open.
            assert producer.connection.connected
        app.send_task("warmup.probe", queue=queue)
        assert client.llen(queue) == 1
    finally:
        client.delete(queue)
        app.close()


def test_a_broker_that_is_down_is_a_warning_not_a_failed_start(caplog):
    app = Celery("warm-up-test", broker=f"redis://127.0.0.1:{free_port()}/0")
    with caplog.at_level(logging.WARNING, logger="kandev_web.warmup"):
        assert broker_warm_up(app) is False
    assert "broker warm-up failed" in caplog.text
    app.close()
