"""Loading the catalogue's fixtures: sanitised real strings with what they must classify as."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recovery.catalogue.evidence_json import evidence_from_json
from recovery.taxonomy import Code, Evidence

FIXTURE_DIR = Path(__file__).with_name("fixtures")
PROSE = "prose"  # the "rule" of fixtures that no rule may match


@dataclass(frozen=True, slots=True)
class Fixture:
    name: str  # file:line, for test ids
    rule: str  # the rule this fixture pins, or "prose"
    positive: bool
    note: str
    evidence: Evidence
    expected_code: Code
    expected_rule_id: str | None
    expected_reset_hint_ms: int | None
    checks_reset_hint: bool


def load_fixtures(directory: Path = FIXTURE_DIR) -> tuple[Fixture, ...]:
    loaded = []
    for path in sorted(directory.glob("*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip():
                loaded.append(_fixture(f"{path.name}:{number}", json.loads(line)))
    return tuple(loaded)


def _fixture(name: str, row: dict[str, Any]) -> Fixture:
    expect = row["expect"]
    if row["polarity"] not in ("positive", "negative"):
        raise ValueError(f"{name}: polarity must be positive or negative")
    return Fixture(
        name=name,
        rule=row["rule"],
        positive=row["polarity"] == "positive",
        note=row["note"],
        evidence=evidence_from_json(row["evidence"]),
        expected_code=Code(expect["code"]),
        expected_rule_id=expect["rule_id"],
        expected_reset_hint_ms=expect.get("reset_hint_ms"),
        checks_reset_hint="reset_hint_ms" in expect,
    )
