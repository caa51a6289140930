"""Loading and validating the replay fixtures. Any defect in the corpus fails the load."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from recovery.providers.acp.replay_fixtures.forbidden import forbidden_shapes_in
from recovery.providers.acp.replay_fixtures.matrix import CLASSIFYING, required_cells

REPLAY_DIR = Path(__file__).parent
CAPTURE_MODES = frozenset({"recorded", "reconstructed"})
DELIVERIES = frozenset({"paced", "batched"})
# Provenance may cite published documentation, and nothing else.
PUBLIC_CONTRACT_HOSTS = frozenset(
    {"agentclientprotocol.com", "docs.anthropic.com", "docs.claude.com", "www.jsonrpc.org"}
)
_SESSION_PLACEHOLDER = "<session>"


class ReplayMatrixError(ValueError):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("replay fixtures are invalid:\n- " + "\n- ".join(problems))
        self.problems = problems


@dataclass(frozen=True, slots=True)
class ReplayExpectation:
    events: tuple[str, ...]
    diagnostic_code: str  # the code of the terminal failure's sanitised projection
    recorded_diagnostic_code: str | None
    retry_allowed: bool
    reason: str


@dataclass(frozen=True, slots=True)
class ReplayFixture:
    path: Path
    gateway: str
    case: str
    agent: str
    classifying: bool
    capture_mode: str
    contract: str | None
    session_id: str
    execution_id: str
    generation: int
    delivery: str
    frames: tuple[dict[str, Any], ...]
    expect: ReplayExpectation

    @property
    def cell(self) -> tuple[str, str]:
        return (self.gateway, self.case)

    def canonical_frames(self) -> str:
        """The frames with the replay identity factored out, re-encoded canonically."""
        text = json.dumps(list(self.frames), sort_keys=True, separators=(",", ":"))
        return text.replace(json.dumps(self.session_id)[1:-1], _SESSION_PLACEHOLDER)


def load_replay_fixtures(directory: Path = REPLAY_DIR) -> tuple[ReplayFixture, ...]:
    problems: list[str] = []
    fixtures: list[ReplayFixture] = []
    for path in sorted(directory.glob("*.json")):
        try:
            fixtures.append(_fixture(path, json.loads(path.read_text(encoding="utf-8"))))
        except (KeyError, TypeError, ValueError) as error:
            problems.append(f"{path.name}: {error}")
    problems += matrix_problems(fixtures)
    if problems:
        raise ReplayMatrixError(problems)
    return tuple(fixtures)


def matrix_problems(fixtures: list[ReplayFixture]) -> list[str]:
    problems: list[str] = []
    required = set(required_cells())
    seen: dict[tuple[str, str], str] = {}
    sessions: dict[str, str] = {}
    frames_by_case: dict[tuple[str, str], str] = {}
    for fixture in fixtures:
        name = fixture.path.name
        if name != f"{fixture.gateway}-{fixture.case}.json":
            problems.append(f"{name}: must be named {fixture.gateway}-{fixture.case}.json")
        if fixture.cell not in required:
            problems.append(f"{name}: {fixture.gateway} x {fixture.case} is not a matrix cell")
        if fixture.cell in seen:
            problems.append(f"{name}: cell {fixture.cell} already filled by {seen[fixture.cell]}")
        seen.setdefault(fixture.cell, name)
        if fixture.classifying != CLASSIFYING.get(fixture.gateway):
            problems.append(f"{name}: classifying flag disagrees with the matrix")
        if fixture.session_id in sessions:
            problems.append(f"{name}: session id also used by {sessions[fixture.session_id]}")
        sessions.setdefault(fixture.session_id, name)
        key = (fixture.case, fixture.canonical_frames())
        if key in frames_by_case:
            problems.append(f"{name}: same frames as {frames_by_case[key]} in case {fixture.case}")
        frames_by_case.setdefault(key, name)
    for cell in sorted(required - set(seen)):
        problems.append(f"missing required cell {cell[0]}-{cell[1]}.json")
    return problems


def _fixture(path: Path, raw: dict[str, Any]) -> ReplayFixture:
    capture = raw["capture"]
    payload = {key: value for key, value in raw.items() if key != "capture"}
    found = forbidden_shapes_in(payload) + forbidden_shapes_in(
        {key: value for key, value in capture.items() if key != "contract"}
    )
    if found:
        raise ValueError(f"forbidden shapes in payload: {', '.join(sorted(set(found)))}")
    mode = capture["mode"]
    contract = capture.get("contract")
    if mode not in CAPTURE_MODES:
        raise ValueError(f"capture mode must be one of {sorted(CAPTURE_MODES)}")
    if mode == "reconstructed" and not _public_contract(contract):
        raise ValueError("a reconstructed fixture must cite a public contract URL")
    generation = raw["generation"]
    if isinstance(generation, bool) or not isinstance(generation, int) or generation <= 0:
        raise ValueError("generation must be a positive integer")
    for key in ("session_id", "execution_id", "agent"):
        if not isinstance(raw[key], str) or not raw[key]:
            raise ValueError(f"{key} must be a non-empty string")
    if raw["delivery"] not in DELIVERIES:
        raise ValueError(f"delivery must be one of {sorted(DELIVERIES)}")
    frames = tuple(raw["frames"])
    if not frames or not all(isinstance(frame, dict) for frame in frames):
        raise ValueError("frames must be a non-empty list of JSON-RPC messages")
    if "id" not in frames[-1] or "method" in frames[-1]:
        raise ValueError("the last frame must be the prompt's response")
    expect = raw["expect"]
    disposition = expect["disposition"]
    return ReplayFixture(
        path=path,
        gateway=raw["gateway"],
        case=raw["case"],
        agent=raw["agent"],
        classifying=bool(raw["classifying"]),
        capture_mode=mode,
        contract=contract,
        session_id=raw["session_id"],
        execution_id=raw["execution_id"],
        generation=generation,
        delivery=raw["delivery"],
        frames=frames,
        expect=ReplayExpectation(
            events=tuple(expect["events"]),
            diagnostic_code=expect["diagnostic_code"],
            recorded_diagnostic_code=expect["recorded_diagnostic_code"],
            retry_allowed=bool(disposition["retry_allowed"]),
            reason=disposition["reason"],
        ),
    )


def _public_contract(contract: Any) -> bool:
    if not isinstance(contract, str):
        return False
    parts = urlsplit(contract)
    return (
        parts.scheme == "https" and parts.hostname in PUBLIC_CONTRACT_HOSTS and not parts.username
    )
