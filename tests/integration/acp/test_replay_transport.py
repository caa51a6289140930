"""The transport layer of the replay matrix: each fixture's frames, written by a fake agent
process over real pipes, read by the real SDK client through the adapter. Every token before
the terminal failure is on the event stream before the prompt call returns."""

from __future__ import annotations

import sys
import time

import pytest

from recovery.providers.acp import AcpPromptRun, AcpPromptSpec, PromptFailure, acp_prompt_iter
from recovery.providers.acp.replay_fixtures import load_replay_fixtures
from recovery.providers.acp.replay_fixtures.consume import (
    event_token,
    failure_judged,
    fixture_correlation,
    merged_text_runs,
    outcome_token,
)

from .conftest import REPO

FIXTURES = load_replay_fixtures()


def replay_spec(fixture) -> AcpPromptSpec:
    return AcpPromptSpec(
        command=(sys.executable, "-m", "recovery.mock.acp_replay", str(fixture.path)),
        cwd=str(REPO),
        prompt="Replay the recorded turn.",
        correlation=fixture_correlation(fixture),
        env={"PYTHONPATH": str(REPO)},
    )


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.path.stem for f in FIXTURES])
async def test_the_transport_layer_yields_the_declared_tokens_and_code(fixture):
    seen: list[str] = []

    outcome = await AcpPromptRun(
        spec=replay_spec(fixture), on_event=lambda event: seen.append(event_token(event))
    ).execute()

    # All tokens were recorded by the time execute() returned; the failure token comes last.
    assert isinstance(outcome, PromptFailure)
    assert merged_text_runs([*seen, outcome_token(outcome)]) == merged_text_runs(
        list(fixture.expect.events)
    )
    verdict = failure_judged(outcome)
    assert verdict.classification.code == fixture.expect.diagnostic_code
    assert verdict.replay.retry_allowed is fixture.expect.retry_allowed
    assert fixture.session_id not in outcome.message


@pytest.mark.parametrize(
    "fixture", [f for f in FIXTURES if f.case == "queued"], ids=lambda f: f.path.stem
)
def test_a_queued_diagnostic_reaches_a_slow_consumer_before_the_failure(fixture):
    items = []
    for item in acp_prompt_iter(replay_spec(fixture)):
        time.sleep(0.01)  # a consumer writing rows must not reorder the stream
        items.append(item)

    tokens = [*map(event_token, items[:-1]), outcome_token(items[-1])]
    assert merged_text_runs(tokens) == merged_text_runs(list(fixture.expect.events))
