"""When several rules match one piece of evidence, the pinned one wins, for the pinned reason."""

from __future__ import annotations

import json

import pytest

from recovery.classify import classify, matching_rules
from recovery.taxonomy import Code, Evidence, Kind, Phase, Source

OVERLOADED_BODY = json.dumps(
    {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
)

COLLISIONS = [
    pytest.param(
        Evidence(source=Source.HTTP, status=529, excerpt=OVERLOADED_BODY),
        "anthropic.overloaded_error.v1",
        "anthropic.overloaded.529.v1",
        Code.PROVIDER_OVERLOADED,
        id="the body's error type beats the bare 529 status",
    ),
    pytest.param(
        Evidence(
            source=Source.HTTP,
            status=429,
            excerpt=json.dumps(
                {
                    "error": {
                        "type": "insufficient_quota",
                        "code": "insufficient_quota",
                        "message": "You exceeded your current quota",
                    }
                }
            ),
        ),
        "openai.insufficient_quota.v2",
        "http.too_many_requests.429.v1",
        Code.BILLING_LIMITED,
        id="insufficient_quota in a 429 is money, not a rate limit",
    ),
    pytest.param(
        Evidence(
            source=Source.HTTP,
            status=400,
            excerpt=json.dumps(
                {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "message": "Your credit balance is too low to access the Anthropic API.",
                    },
                }
            ),
        ),
        "anthropic.credit_balance_too_low.v2",
        "anthropic.invalid_request_error.v1",
        Code.BILLING_LIMITED,
        id="credit balance beats the invalid_request_error it arrives as",
    ),
    pytest.param(
        Evidence(source=Source.HTTP, status=529, kind=Kind.CANCELLED, excerpt=OVERLOADED_BODY),
        "evidence.cancelled.v1",
        "anthropic.overloaded_error.v1",
        Code.CANCELLED,
        id="our own cancel beats whatever the provider said",
    ),
    pytest.param(
        Evidence(
            source=Source.STDERR,
            excerpt="peer disconnected before response: API Error: 529 Overloaded",
        ),
        "acp.transport_lost.overloaded.v1",
        "acp.transport_lost.v1",
        Code.PROVIDER_OVERLOADED,
        id="overload beats transport loss on one line",
    ),
    pytest.param(
        Evidence(source=Source.ACP_PROMPT, kind=Kind.SERVER, excerpt="API Error: 529 Overloaded."),
        "acp.claude.api_error_529.v1",
        "evidence.kind.server.v1",
        Code.PROVIDER_OVERLOADED,
        id="an exact signature beats the adapter's coarse kind",
    ),
    pytest.param(
        Evidence(
            source=Source.HTTP,
            status=502,
            excerpt=json.dumps(
                {
                    "type": "error",
                    "error": {
                        "type": "proxy_error",
                        "message": "All account credentials were refused by the upstream provider.",
                    },
                }
            ),
        ),
        "proxy.credentials_refused.v1",
        "http.server_error.5xx.v1",
        Code.AUTH_REQUIRED,
        id="a proxy's credential refusal beats its gateway status",
    ),
    pytest.param(
        Evidence(
            source=Source.HTTP, status=500, kind=Kind.NETWORK, phase=Phase.CANCELLATION, excerpt=""
        ),
        "evidence.cancellation_phase.v1",
        "http.server_error.5xx.v1",
        Code.CANCELLED,
        id="a failure while cancelling is the cancellation",
    ),
]


@pytest.mark.parametrize(("evidence", "winner", "loser", "code"), COLLISIONS)
def test_collisions_resolve_as_pinned(evidence, winner, loser, code):
    matched = [rule.id for rule in matching_rules(evidence)]

    assert winner in matched and loser in matched
    assert matched.index(winner) < matched.index(loser)
    assert classify(evidence).rule_id == winner
    assert classify(evidence).code is code


def test_a_transport_loss_line_with_a_cancellation_word_is_vetoed_entirely():
    evidence = Evidence(
        source=Source.STDERR,
        excerpt="peer disconnected before response: API Error: 529 Overloaded (context canceled)",
    )
    assert matching_rules(evidence) == ()


def test_signatures_match_one_line_at_a_time():
    split = Evidence(source=Source.ACP_CHUNK, excerpt="API Error:\n529 Overloaded")
    assert classify(split).code is Code.UNCLASSIFIED


def test_a_signature_only_in_json_rpc_data_is_not_classified():
    evidence = Evidence(
        source=Source.ACP_PROMPT,
        excerpt=json.dumps(
            {
                "code": -32603,
                "message": "Internal error",
                "data": {"error": "API Error: 529 Overloaded"},
            }
        ),
    )
    assert classify(evidence).code is Code.UNCLASSIFIED
