"""The provider's own timing hints, read from real HTTP headers: Retry-After (seconds and an HTTP
date), retry-after-ms, x-ratelimit-reset-* and x-should-retry. Honoured as sent, and bounded."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime

import httpx2
import pytest

from recovery.clock import FakeClock
from recovery.providers.failures import (
    HINT_LIMIT_MS,
    reset_at_ms,
    retry_after_ms,
    should_retry,
    status_failure,
)

CLOCK = FakeClock()


def headers(**values: str) -> httpx2.Headers:
    return httpx2.Headers({name.replace("_", "-"): value for name, value in values.items()})


@pytest.mark.parametrize(
    ("sent", "expected_ms"),
    [
        ({"retry_after": "90"}, 90_000),
        ({"retry_after": "1.5"}, 1_500),
        ({"retry_after": "0"}, 0),
        ({"retry_after_ms": "250", "retry_after": "90"}, 250),  # the precise one wins
        (
            {
                "retry_after": format_datetime(
                    datetime.fromtimestamp(CLOCK.now() + 120, tz=UTC), usegmt=True
                )
            },
            120_000,
        ),
        (
            {
                "retry_after": format_datetime(
                    datetime.fromtimestamp(CLOCK.now() - 50, tz=UTC), usegmt=True
                )
            },
            0,
        ),
        ({"retry_after": "1000000000000"}, HINT_LIMIT_MS),  # not 11574074 days
        ({"retry_after_ms": "1e30"}, HINT_LIMIT_MS),
        ({"retry_after": "soon"}, None),
        ({"retry_after": "-5"}, None),
        ({"retry_after": "inf"}, None),
        ({}, None),
    ],
)
def test_retry_after_is_read_in_every_form_and_bounded(sent, expected_ms):
    assert retry_after_ms(headers(**sent), clock=CLOCK) == expected_ms


def test_an_openai_reset_duration_is_read_and_bounded():
    now_ms = int(CLOCK.now() * 1000)
    sent = headers(x_ratelimit_reset_requests="6m0s", x_ratelimit_remaining_requests="0")
    assert reset_at_ms(sent, clock=CLOCK) == now_ms + 360_000
    huge = headers(x_ratelimit_reset_tokens="99999999h")
    assert reset_at_ms(huge, clock=CLOCK) == now_ms + HINT_LIMIT_MS


@pytest.mark.parametrize(
    ("sent", "expected"),
    [("true", True), ("TRUE ", True), ("false", False), ("False", False), ("maybe", None)],
)
def test_x_should_retry_is_read_both_ways(sent, expected):
    assert should_retry(headers(x_should_retry=sent)) is expected
    assert should_retry(headers()) is None


def test_an_http_failure_carries_the_providers_hints_as_evidence():
    failure = status_failure(
        provider_id="anthropic",
        model="m",
        status=529,
        headers=headers(retry_after="90", x_should_retry="false"),
        body=b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
        clock=CLOCK,
    )
    assert (failure.evidence.retry_after_ms, failure.evidence.should_retry) == (90_000, False)
