"""The Prometheus view of ``sessions_app.metrics``: what /metrics serves.

A collector reads the counted metrics back from Redis and the scraped gauges from their source
of truth (provider health in Redis, the broker's queue, open notices in Postgres), each time it is
scraped. Nothing is kept in this process, so any web process answers for the whole deployment.
A source that fails to answer leaves its metric out of that scrape rather than failing it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import amqp.exceptions
import kombu.exceptions
from celery import current_app
from django.conf import settings
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from recovery.circuit import CircuitState
from sessions_app import metrics
from sessions_app.ladder.models import RetryNotice
from sessions_app.services.target_health import health_all

logger = logging.getLogger(__name__)

CIRCUIT_VALUE = {CircuitState.CLOSED: 0, CircuitState.HALF_OPEN: 1, CircuitState.OPEN: 2}
BROKER_TIMEOUT_S = 1.0


def _labels(field: str) -> list[str]:
    return [str(value) for value in json.loads(field)]


def _counter(metric: metrics.Metric) -> Metric:
    # prometheus_client adds "_total" to a counter family's samples itself.
    family = CounterMetricFamily(
        metric.name.removesuffix("_total"), metric.help, labels=list(metric.labels)
    )
    for field, value in sorted(metrics.read_series(metric).items()):
        family.add_metric(_labels(field), value)
    return family


def _gauge_counted(metric: metrics.Metric) -> Metric:
    family = GaugeMetricFamily(metric.name, metric.help, labels=list(metric.labels))
    for field, value in sorted(metrics.read_series(metric).items()):
        family.add_metric(_labels(field), max(value, 0.0))
    return family


def _histogram(metric: metrics.Metric) -> Metric:
    family = HistogramMetricFamily(metric.name, metric.help, labels=list(metric.labels))
    series: dict[str, dict[str, float]] = {}
    for field, value in metrics.read_series(metric).items():
        labels, _, part = field.rpartition("|")
        series.setdefault(labels, {})[part] = value
    for labels, parts in sorted(series.items()):
        cumulative, buckets = 0.0, []
        for le in (*[str(b) for b in metric.buckets], "+Inf"):
            cumulative += parts.get(le, 0.0)
            buckets.append((le, cumulative))
        family.add_metric(_labels(labels), buckets, parts.get("sum", 0.0))
    return family


def _circuit_state() -> Metric:
    metric = metrics.CIRCUIT_STATE
    family = GaugeMetricFamily(metric.name, metric.help, labels=list(metric.labels))
    for target, health in sorted(health_all().items()):
        family.add_metric([target], CIRCUIT_VALUE[health.state])
    return family


def queue_depth(queue: str) -> int:
    """Messages waiting in ``queue``, asked of the broker itself (Redis or RabbitMQ alike)."""
    with current_app.connection_for_read() as connection:
        connection.ensure_connection(max_retries=1, timeout=BROKER_TIMEOUT_S)
        try:
            declared = connection.default_channel.queue_declare(queue=queue, passive=True)
        except (kombu.exceptions.ChannelError, amqp.exceptions.ChannelError):
            return 0  # not declared yet: no worker consumed it and nothing was sent to it
        return int(declared.message_count)


def _queue_depth() -> Metric | None:
    metric = metrics.QUEUE_DEPTH
    queue = settings.CELERY_TASK_DEFAULT_QUEUE
    try:
        depth = queue_depth(queue)
    except Exception as error:  # noqa: BLE001  (an unanswered broker leaves the gauge out)
        logger.warning("queue depth of %s unavailable (%s)", queue, type(error).__name__)
        return None
    family = GaugeMetricFamily(metric.name, metric.help, labels=list(metric.labels))
    family.add_metric([queue], depth)
    return family


def _open_notices() -> Metric:
    metric = metrics.OPEN_NOTICES
    return GaugeMetricFamily(metric.name, metric.help, value=RetryNotice.objects.live().count())


class KandevCollector:
    def collect(self) -> Iterator[Metric]:
        for metric in metrics.ALL:
            if metric.kind == "counter":
                yield _counter(metric)
            elif metric.kind == "histogram":
                yield _histogram(metric)
            elif metric.kind == "gauge":
                yield _gauge_counted(metric)
        yield _circuit_state()
        depth = _queue_depth()
        if depth is not None:
            yield depth
        yield _open_notices()


def metrics_text() -> bytes:
    """The Prometheus text exposition of every metric, read afresh."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(KandevCollector())
    return generate_latest(registry)
