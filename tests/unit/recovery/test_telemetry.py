"""One structured, secret-free log line per provider attempt."""

from __future__ import annotations

import json
import logging
import random

from recovery.budget import Budget, RetrySettings
from recovery.classify import classify
from recovery.clock import FakeClock
from recovery.policy import decide
from recovery.taxonomy import Evidence, Exposure, Kind, Phase, Source
from recovery.telemetry import ATTEMPT_LOGGER, AttemptRecord, attempt_record_build, emit_attempt


def test_an_attempt_is_logged_as_one_json_line_with_every_field(caplog):
    clock = FakeClock()
    evidence = Evidence(
        source=Source.SSE,
        status=200,
        provider_code="overloaded_error",
        kind=Kind.OVERLOAD,
        phase=Phase.STREAM,
        exposure=Exposure.METADATA,
        excerpt="Overloaded; key=sk-ant-test-000SECRETSECRET",
    )
    classification = classify(evidence)
    budget = Budget.start(
        settings=RetrySettings(jitter=0), clock=clock, target="anthropic"
    ).record_attempt(target="anthropic")
    decision = decide(
        evidence=evidence,
        classification=classification,
        budget=budget,
        current_target="anthropic",
        fallbacks=(),
        clock=clock,
        rng=random.Random(1),
    )
    record = attempt_record_build(
        attempt=1,
        target="anthropic",
        evidence=evidence,
        classification=classification,
        decision=decision,
        ttft_ms=None,
        bytes_received=812,
        input_tokens=42,
        output_tokens=None,
    )

    with caplog.at_level(logging.INFO, logger=ATTEMPT_LOGGER):
        emit_attempt(record)

    [logged] = caplog.records
    assert json.loads(logged.getMessage()) == {
        "event": "provider_attempt",
        "attempt": 1,
        "target": "anthropic",
        "phase": "stream",
        "kind": "overload",
        "code": "provider_overloaded",
        "rule_id": "anthropic.overloaded_error.v1",
        "exposure": "metadata",
        "wait_s": 5.0,
        "ttft_ms": None,
        "bytes_received": 812,
        "input_tokens": 42,
        "output_tokens": None,
        "decision": "retry",
    }
    assert "SECRET" not in caplog.text


def test_a_successful_attempt_reads_as_success():
    record = attempt_record_build(attempt=2, target="openai", ttft_ms=310.0, bytes_received=5000)
    assert (record.decision, record.code, record.kind) == ("success", "none", "none")


def test_a_target_name_is_passed_through_the_credential_tier(caplog):
    record = AttemptRecord(
        1,
        "https://user:hunter2pass@gw.example",
        None,
        "network",
        "network_unavailable",
        "evidence.network.v1",
        "none",
        0.0,
        None,
        0,
        None,
        None,
        "retry",
    )
    with caplog.at_level(logging.INFO, logger=ATTEMPT_LOGGER):
        emit_attempt(record)
    assert "hunter2pass" not in caplog.text
