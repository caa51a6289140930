"""The replay matrix: which gateway x case cells must have a fixture.

A gateway is classifying when the catalogue has a message-text rule for the errors it relays.
OpenRouter and LiteLLM have none yet, so their envelopes classify as nothing; the three prose-
cases assert that prose is not mistaken for a provider diagnostic, which says nothing when the
terminal error classifies as nothing, so they are required only for classifying gateways.
"""

from __future__ import annotations

GATEWAYS: tuple[str, ...] = ("claude-direct", "teamclaude", "openrouter", "litellm")
CASES: tuple[str, ...] = (
    "matched",
    "mismatched",
    "later-output",
    "queued",
    "prose-matched",
    "prose-tool",
    "prose-output",
)
EVERY_GATEWAY_CASES = frozenset({"matched", "mismatched", "later-output", "queued"})
CLASSIFYING: dict[str, bool] = {
    "claude-direct": True,
    "teamclaude": True,
    "openrouter": False,
    "litellm": False,
}


def required_cells() -> tuple[tuple[str, str], ...]:
    return tuple(
        (gateway, case)
        for gateway in GATEWAYS
        for case in CASES
        if case in EVERY_GATEWAY_CASES or CLASSIFYING[gateway]
    )
