"""Replays recorded live from Claude Code, Codex and Gemini CLI (scripts/capture_agent_replays.py):
each file's frames, written by the fake replay agent over real pipes, read by the real SDK client
through the adapter, reach the classification and disposition the live run reached."""

from __future__ import annotations

import json
import sys

import pytest

from recovery.providers.acp import AcpPromptRun, AcpPromptSpec, PromptFailure
from recovery.providers.acp.recorded import AGENT_KINDS, load_recorded_fixtures
from recovery.providers.acp.replay_fixtures import forbidden_shapes_in
from recovery.providers.acp.replay_fixtures.consume import (
    event_token,
    failure_judged,
    fixture_correlation,
    outcome_token,
)

from .conftest import REPO

FIXTURES = load_recorded_fixtures()


def test_every_agent_has_recorded_replays_of_each_failure_shape():
    cases = {(f.gateway, f.case) for f in FIXTURES}
    for kind in AGENT_KINDS:
        assert {case for agent, case in cases if agent == kind} >= {
            "overloaded",
            "rate-limited",
            "after-text",
            "cut",
            "cut-before-output",
        }, kind
    assert {f.capture_mode for f in FIXTURES} == {"recorded"}


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.path.stem for f in FIXTURES])
async def test_a_recorded_replay_reaches_what_the_live_run_reached(fixture):
    seen: list[str] = []
    spec = AcpPromptSpec(
        command=(sys.executable, "-m", "recovery.mock.acp_replay", str(fixture.path)),
        cwd=str(REPO),
        prompt="Replay the recorded turn.",
        correlation=fixture_correlation(fixture),
        env={"PYTHONPATH": str(REPO)},
    )

    outcome = await AcpPromptRun(
        spec=spec, on_event=lambda e: seen.append(event_token(e))
    ).execute()

    assert isinstance(outcome, PromptFailure)
    assert [t for t in seen if t != "model"] + [outcome_token(outcome)] == list(
        fixture.expect.events
    )
    judged = failure_judged(outcome)
    assert judged.classification.code == fixture.expect.diagnostic_code
    assert judged.replay.retry_allowed is fixture.expect.retry_allowed
    assert str(judged.replay.reason) == fixture.expect.reason


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.path.stem for f in FIXTURES])
def test_a_recorded_replay_holds_no_identity_url_or_host_path(fixture):
    raw = json.loads(fixture.path.read_text(encoding="utf-8"))

    assert forbidden_shapes_in(raw) == []
