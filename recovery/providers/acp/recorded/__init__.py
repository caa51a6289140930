"""Replay fixtures recorded live from the real agent CLIs against the mock provider.

``scripts/capture_agent_replays.py`` ran Claude Code, Codex and Gemini CLI (as the agent registry
launches them: their own retries off) through the real adapter, kept every frame the agent sent
after ``session/prompt``, sanitised identities, URLs and host paths, and wrote one file per agent
and case (capture mode "recorded"). They load with the same validation as the reconstructed
corpus, without its gateway x case matrix: each file is its own cell.
"""

from __future__ import annotations

import json
from pathlib import Path

from recovery.providers.acp.replay_fixtures.loader import ReplayFixture, ReplayMatrixError, _fixture

RECORDED_DIR = Path(__file__).parent
AGENT_KINDS = ("claude", "codex", "gemini")


def load_recorded_fixtures(directory: Path = RECORDED_DIR) -> tuple[ReplayFixture, ...]:
    problems: list[str] = []
    fixtures: list[ReplayFixture] = []
    for path in sorted(directory.glob("*.json")):
        try:
            fixture = _fixture(path, json.loads(path.read_text(encoding="utf-8")))
        except (KeyError, TypeError, ValueError) as error:
            problems.append(f"{path.name}: {error}")
            continue
        if fixture.capture_mode != "recorded":
            problems.append(f"{path.name}: capture mode must be recorded")
        if fixture.gateway not in AGENT_KINDS:
            problems.append(f"{path.name}: {fixture.gateway} is not an agent kind")
        if path.name != f"{fixture.gateway}-{fixture.case}.json":
            problems.append(f"{path.name}: must be named {fixture.gateway}-{fixture.case}.json")
        fixtures.append(fixture)
    if problems:
        raise ReplayMatrixError(problems)
    return tuple(fixtures)
