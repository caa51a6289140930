"""GET /metrics: who may read it, and that it shows what the ladder, the circuit, the broker and
the viewers really did, counted across processes in the real Redis."""

from __future__ import annotations

import json
import logging
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from celery import current_app
from django.conf import settings
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from recovery.logs import JsonFormatter, bound
from recovery.mock.testing import SplitClock
from sessions_app import metrics
from sessions_app.agent.runner import generation_retry, generation_run
from sessions_app.ladder.models import RetryLoop
from sessions_app.push import push_drain
from sessions_app.services import prompt_submit
from sessions_app.services.target_health import health_failure
from tests.support.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "metrics-token-for-the-tests-0123456789"
DASHBOARD = Path(settings.BASE_DIR, "docs", "grafana", "kandev.json")


@pytest.fixture
def token(settings):
    settings.KANDEV_METRICS_TOKEN = TOKEN
    return TOKEN


def scrape(client: Client | None = None, **headers) -> dict[str, dict[tuple, float]]:
    response = (client or Client()).get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    samples: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            key = tuple(sorted(sample.labels.items()))
            samples.setdefault(sample.name, {})[key] = sample.value
    return samples


def value(samples, name, **labels) -> float:
    return samples.get(name, {}).get(tuple(sorted(labels.items())), 0.0)


def test_without_credentials_it_answers_401_with_a_bearer_challenge(token):
    response = Client().get("/metrics")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert b"kandev_" not in response.content


def test_a_signed_in_user_who_is_not_staff_gets_403(client, token):
    client.force_login(UserFactory(username="someone"))
    assert client.get("/metrics").status_code == 403


def test_a_wrong_token_gets_403(token):
    response = Client().get("/metrics", headers={"Authorization": "Bearer not-the-token"})
    assert response.status_code == 403


def test_with_no_token_configured_a_bearer_token_is_refused(settings):
    settings.KANDEV_METRICS_TOKEN = ""
    response = Client().get("/metrics", headers={"Authorization": "Bearer anything-at-all"})
    assert response.status_code == 403


def test_a_staff_session_reads_them(client):
    client.force_login(UserFactory(username="operator", is_staff=True))
    response = client.get("/metrics")
    assert response.status_code == 200
    assert b"kandev_open_notices" in response.content


def test_a_recovered_turn_shows_its_failure_its_retry_and_its_recovery(
    chat, owner, mock_provider, token, celery_queue
):
    clock = SplitClock()
    generation = prompt_submit(session=chat, user=owner, text="/overloaded:1 hello")
    generation_run(generation_id=generation.pk, clock=clock, rng=random.Random(1))
    waiting = scrape()
    assert value(waiting, "kandev_open_notices") == 1
    assert value(waiting, "kandev_retries_total", outcome="scheduled", target="Mock") == 1

    loop = RetryLoop.objects.get(generation=generation)
    clock.wall.set(loop.next_attempt_at.timestamp())
    generation_retry(loop_id=loop.pk, attempt=loop.attempt, clock=clock, rng=random.Random(1))

    assert push_drain()  # pushes go out on the push loop; their latency is written in batches
    samples = scrape()
    assert (
        value(samples, "kandev_transient_failures_total", code="provider_overloaded", target="Mock")
        == 1
    )
    assert value(samples, "kandev_retries_total", outcome="succeeded", target="Mock") == 1
    assert value(samples, "kandev_retries_total", outcome="exhausted", target="Mock") == 0
    assert value(samples, "kandev_recovery_seconds_count", target="Mock") == 1
    assert value(samples, "kandev_open_notices") == 0
    assert value(samples, "kandev_queue_wait_seconds_count") == 1
    assert value(samples, "kandev_push_latency_seconds_count") >= 3  # messages, notices


def test_the_circuit_state_of_a_target_is_shown(settings, token):
    for offset in range(settings.KANDEV_HEALTH.failures_to_open):
        health_failure(target_name="Mock", now=1_800_000_000.0 + offset, code="rate_limited")
    assert value(scrape(), "kandev_circuit_state", target="Mock") == 2


def test_queue_depth_is_asked_of_the_broker(token, celery_queue):
    before = value(scrape(), "kandev_queue_depth", queue=celery_queue)
    for n in range(3):
        current_app.send_task("sessions_app.run_generation", args=(10_000_000 + n,))
    assert value(scrape(), "kandev_queue_depth", queue=celery_queue) == before + 3


def test_counts_from_another_process_add_up_with_this_ones(token):
    metrics.count(metrics.RETRIES, outcome="cancelled", target="Mock")
    code = (
        "from sessions_app import metrics;"
        "metrics.count(metrics.RETRIES, outcome='cancelled', target='Mock');"
        "metrics.observe(metrics.QUEUE_WAIT_SECONDS, 0.3)"
    )
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=settings.BASE_DIR, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    samples = scrape()
    assert value(samples, "kandev_retries_total", outcome="cancelled", target="Mock") == 2
    assert value(samples, "kandev_queue_wait_seconds_bucket", le="0.5") == 1
    assert value(samples, "kandev_queue_wait_seconds_bucket", le="0.25") == 0


def test_with_redis_down_counting_is_dropped_and_the_scrape_still_answers(settings, token):
    settings.REDIS = {**settings.REDIS, "client": "redis://127.0.0.1:1/0"}
    metrics.count(metrics.RETRIES, outcome="scheduled", target="Mock")
    metrics.observe(metrics.PUSH_LATENCY_SECONDS, 0.01)
    samples = scrape()
    assert value(samples, "kandev_retries_total", outcome="scheduled", target="Mock") == 0


def test_a_metric_given_the_wrong_labels_is_a_programming_error():
    with pytest.raises(ValueError, match="kandev_retries_total takes labels"):
        metrics.count(metrics.RETRIES, outcome="scheduled")


def sample_names() -> set[str]:
    """The series names a scrape holds: a histogram's are its _bucket, _sum and _count."""
    names = set()
    for metric in metrics.ALL:
        if metric.kind == "histogram":
            names.update(metric.name + suffix for suffix in metrics.HISTOGRAM_SUFFIXES)
        else:
            names.add(metric.name)
    return names


def test_every_query_of_the_grafana_dashboard_uses_an_exported_metric(token):
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    used = {name for expr in exprs for name in re.findall(r"\bkandev_[a-z_]+\b", expr)}
    assert used, "the dashboard queries nothing"
    assert used <= sample_names(), used - sample_names()
    # ... and the dashboard shows every metric there is.
    assert {metric.name for metric in metrics.ALL} <= {
        name.removesuffix("_bucket") for name in used
    }


def test_every_exported_name_appears_in_a_scrape(token, chat, owner, mock_provider):
    for metric in metrics.ALL:
        if metric.kind == "histogram":
            metrics.observe(metric, 1.0, **{label: "x" for label in metric.labels})
        elif metric.kind in ("counter", "gauge"):
            metrics.count(metric, **{label: "x" for label in metric.labels})
    health_failure(target_name="Mock", now=1_800_000_000.0, code="provider_overloaded")
    scraped = set(scrape())
    assert sample_names() <= scraped, sample_names() - scraped


def test_a_json_log_line_carries_the_turn_and_request_ids_and_no_key():
    record = logging.LogRecord(
        "sessions_app.agent.turn", logging.INFO, __file__, 1,
        "calling with key %s", ("sk-ant-api03-" + "Ab3dE5gH7jK9mN1pQ3sT5vX7zB9dF1hJ3lN5pR7tV9xZ",),
        None,
    )  # fmt: skip
    with bound(request_id="req-12345678", turn_id="42:2"):
        line = json.loads(JsonFormatter().format(record))
    assert (line["request_id"], line["turn_id"], line["level"]) == ("req-12345678", "42:2", "INFO")
    assert "sk-ant-api03" not in line["message"]
    assert line["message"].startswith("calling with key ")
    without = json.loads(JsonFormatter().format(record))
    assert "request_id" not in without and "turn_id" not in without


def test_each_response_names_its_request_id(client):
    given = client.get("/healthz", headers={"X-Request-ID": "trace-abcdef12"})
    assert given["X-Request-ID"] == "trace-abcdef12"
    made_up = client.get("/healthz", headers={"X-Request-ID": "bad id with spaces"})
    assert re.fullmatch(r"[0-9a-f]{32}", made_up["X-Request-ID"])


def test_a_batch_gathers_observations_and_writes_them_together_when_due(token):
    now = [100.0]
    batch = metrics.Batch(every_s=1.0, clock=lambda: now[0])
    assert batch.observe(metrics.PUSH_LATENCY_SECONDS, 0.002) is True  # the first is due at once
    assert batch.observe(metrics.PUSH_LATENCY_SECONDS, 0.02) is False
    assert value(scrape(), "kandev_push_latency_seconds_count") == 0  # gathered, not written
    batch.write()
    samples = scrape()
    assert value(samples, "kandev_push_latency_seconds_count") == 2
    assert value(samples, "kandev_push_latency_seconds_bucket", le="0.0025") == 1
    assert value(samples, "kandev_push_latency_seconds_sum") == pytest.approx(0.022)
    now[0] += 0.99
    assert batch.observe(metrics.PUSH_LATENCY_SECONDS, 0.5) is False
    now[0] += 0.01
    assert batch.observe(metrics.PUSH_LATENCY_SECONDS, 0.5) is True
