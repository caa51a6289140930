"""Decoding records what the provider said; only the catalogue says what it means."""

from __future__ import annotations

import pytest

from recovery.classify import classify
from recovery.clock import FakeClock
from recovery.providers.failures import status_failure, stream_error_failure
from recovery.taxonomy import Code, Kind

RATE_LIMIT_BODY = (
    b'{"error":{"message":"Rate limit reached for requests per min (RPM).","type":"requests",'
    b'"param":null,"code":"rate_limit_exceeded"}}'
)


def test_an_error_response_is_recorded_and_left_unjudged():
    failure = status_failure(
        provider_id="openai",
        model="m",
        status=429,
        headers={"retry-after": "3"},
        body=RATE_LIMIT_BODY,
        clock=FakeClock(),
    )

    evidence = failure.evidence
    assert (evidence.kind, evidence.status, evidence.provider_code) == (
        Kind.UNKNOWN,
        429,
        "rate_limit_exceeded",
    )
    assert evidence.retry_after_ms == 3000 and "Rate limit reached" in evidence.excerpt
    assert classify(evidence).rule_id == "anthropic.rate_limit_error.v1"


def test_a_status_no_rule_names_goes_to_a_person():
    # The decoder does not call every 4xx or 5xx an error it knows: the catalogue decides.
    failure = status_failure(
        provider_id="openai",
        model="m",
        status=418,
        headers={},
        body=b"I'm a teapot",
        clock=FakeClock(),
    )

    assert classify(failure.evidence).code is Code.UNCLASSIFIED


@pytest.mark.parametrize("status", [501, 505])
def test_501_and_505_are_hard_set_up_failures_not_weather(status):
    failure = status_failure(
        provider_id="openai", model="m", status=status, headers={}, body=b"", clock=FakeClock()
    )

    classification = classify(failure.evidence)
    assert (classification.code, classification.is_transient) == (
        Code.PROVIDER_NOT_CONFIGURED,
        False,
    )


def test_a_status_a_gateway_relays_inside_a_200_stream_is_read_by_the_status_rules():
    payload = {"error": {"message": "litellm.RateLimitError", "type": "None", "code": "429"}}
    failure = stream_error_failure(provider_id="openai", model="m", payload=payload, status=200)

    assert (failure.evidence.status, failure.evidence.provider_code) == (200, None)
    classification = classify(failure.evidence)
    assert (classification.code, classification.rule_id) == (
        Code.RATE_LIMITED,
        "http.too_many_requests.429.v1",
    )
