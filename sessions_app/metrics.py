"""Operator metrics, counted in Redis so that every process adds to the same numbers.

Daphne and each Celery worker are separate processes, and beyond one machine they run on separate
hosts. prometheus-client's multiprocess mode sums processes through a directory of memory-mapped
files: it reaches only the processes of one host, needs that directory wiped on every restart,
and would leave /metrics on a web process blind to workers elsewhere. Redis is already shared by
every process of a deployment, so counters and histograms are Redis hashes (HINCRBYFLOAT, atomic
across processes), and /metrics, on any web process, reads them all. A Redis error drops the
sample (``sessions_app.redis_state.fail_open``): metrics never stop a turn.

Gauges that have a source of truth are read from it at scrape time instead of being counted:
circuit state from the provider health hashes, queue depth from the broker, open notices from
Postgres. Connected viewers are counted up and down by the websocket consumers.

Every name here is exported by ``sessions_app.metrics_export``; docs/grafana/kandev.json queries
them, and a test holds the dashboard to this list.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis

from sessions_app.redis_state import fail_open, shared_key

# Seconds: a turn recovers in seconds to a couple of minutes; a queue waits milliseconds to
# minutes; a push takes milliseconds.
RECOVERY_BUCKETS = (1, 2.5, 5, 10, 20, 40, 60, 90, 120, 180, 300)
WAIT_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
PUSH_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1)


@dataclass(frozen=True, slots=True)
class Metric:
    name: str
    kind: str  # counter, histogram, gauge (counted), scraped (read at scrape time)
    help: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()


TRANSIENT_FAILURES = Metric(
    "kandev_transient_failures_total", "counter",
    "Provider calls that failed with a classified transient failure.", ("code", "target"),
)  # fmt: skip
RETRIES = Metric(
    "kandev_retries_total", "counter",
    "Automatic retries by outcome: scheduled, succeeded, exhausted, cancelled.",
    ("outcome", "target"),
)  # fmt: skip
DEFERRALS = Metric(
    "kandev_provider_deferrals_total", "counter",
    "Provider calls held back by the target's shared health (circuit, Retry-After, retry budget).",
    ("reason", "target"),
)  # fmt: skip
CIRCUIT_TRANSITIONS = Metric(
    "kandev_circuit_transitions_total", "counter",
    "Changes of a target's circuit seen by the waiting turns: hold or release.",
    ("kind", "target"),
)  # fmt: skip
RECOVERY_SECONDS = Metric(
    "kandev_recovery_seconds", "histogram",
    "Time from a turn's first failed call to the retried call that succeeded.",
    ("target",), RECOVERY_BUCKETS,
)  # fmt: skip
QUEUE_WAIT_SECONDS = Metric(
    "kandev_queue_wait_seconds", "histogram",
    "Time a prompt waited from submission until a worker claimed it.", (), WAIT_BUCKETS,
)  # fmt: skip
PUSH_LATENCY_SECONDS = Metric(
    "kandev_push_latency_seconds", "histogram",
    "Time from writing a session event to handing it to the channel layer.", (), PUSH_BUCKETS,
)  # fmt: skip
CONNECTED_VIEWERS = Metric(
    "kandev_connected_viewers", "gauge", "Open session websockets, across every web process.",
)  # fmt: skip
CIRCUIT_STATE = Metric(
    "kandev_circuit_state", "scraped",
    "A target's circuit: 0 closed, 1 half-open (one probe in flight), 2 open.", ("target",),
)  # fmt: skip
QUEUE_DEPTH = Metric(
    "kandev_queue_depth", "scraped", "Tasks waiting in the broker queue.", ("queue",),
)  # fmt: skip
OPEN_NOTICES = Metric(
    "kandev_open_notices", "scraped", "Retry banners shown right now.",
)  # fmt: skip

ALL = (
    TRANSIENT_FAILURES, RETRIES, DEFERRALS, CIRCUIT_TRANSITIONS, RECOVERY_SECONDS,
    QUEUE_WAIT_SECONDS, PUSH_LATENCY_SECONDS, CONNECTED_VIEWERS, CIRCUIT_STATE, QUEUE_DEPTH,
    OPEN_NOTICES,
)  # fmt: skip
# Histogram series are exported with these suffixes (Prometheus' text format).
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def metric_key(metric: Metric) -> str:
    return shared_key("metrics", metric.name)


def _field(metric: Metric, labels: dict[str, str]) -> str:
    if set(labels) != set(metric.labels):
        raise ValueError(f"{metric.name} takes labels {metric.labels}, got {sorted(labels)}")
    return json.dumps([str(labels[name]) for name in metric.labels])


def count(metric: Metric, amount: float = 1.0, **labels: str) -> None:
    """Add to a counter (or move a counted gauge by ``amount``)."""
    field = _field(metric, labels)
    fail_open(
        f"metrics ({metric.name})",
        lambda client: client.hincrbyfloat(metric_key(metric), field, amount),
        default=None,
    )


def observe(metric: Metric, value: float, **labels: str) -> None:
    """Record one observation of a histogram: its bucket, the sum and the count."""
    _write(metric.name, _observation(metric, value, labels))


def _observation(
    metric: Metric, value: float, labels: dict[str, str]
) -> dict[tuple[str, str], float]:
    """The hash increments one observation makes: (key, field) -> amount."""
    series = _field(metric, labels)
    bucket = next((str(le) for le in metric.buckets if value <= le), "+Inf")
    key = metric_key(metric)
    return {
        (key, f"{series}|{bucket}"): 1,
        (key, f"{series}|sum"): value,
        (key, f"{series}|count"): 1,
    }


def _write(what: str, increments: dict[tuple[str, str], float]) -> None:
    def write(client: redis.Redis) -> None:
        pipe = client.pipeline(transaction=False)
        for (key, field), amount in increments.items():
            pipe.hincrbyfloat(key, field, amount)
        pipe.execute()

    if increments:
        fail_open(f"metrics ({what})", write, default=None)


class Batch:
    """Histogram observations gathered in this process and written to Redis together, for a
    metric observed so often (every push) that a Redis round trip each would cost more than what
    it measures. ``observe`` is cheap and says when a write is due (``every_s`` after the last);
    the caller runs ``write`` where blocking is fine. What has not been written when the process
    ends is lost, like an observation Redis refused."""

    def __init__(self, *, every_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._every_s = every_s
        self._clock = clock
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, str], float] = {}
        self._due_at = clock()

    def observe(self, metric: Metric, value: float, **labels: str) -> bool:
        increments = _observation(metric, value, labels)
        with self._lock:
            for field, amount in increments.items():
                self._pending[field] = self._pending.get(field, 0) + amount
            now = self._clock()
            if now < self._due_at:
                return False
            self._due_at = now + self._every_s
            return True

    def write(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
        _write("batch", pending)


def read_series(metric: Metric) -> dict[str, float]:
    """The raw hash of a counted metric (field -> value); {} when Redis is unavailable."""

    def read(client: redis.Redis) -> dict[str, float]:
        return {field: float(value) for field, value in client.hgetall(metric_key(metric)).items()}

    return fail_open(f"metrics read ({metric.name})", read, default={})
