"""Operators ask why: ``python -m recovery classify`` < evidence.jsonl > classifications.jsonl.

Each input line is one JSON object whose keys are Evidence field names (only ``source`` and
``excerpt`` are required); the excerpt is redacted (diagnostic tier) before it is classified.
A bad line stops the run with a one-line error naming the key and a non-zero exit.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import IO, Any

from recovery.catalogue.evidence_json import BadEvidence, evidence_from_json
from recovery.classify import classify
from recovery.redact import redact_credentials
from recovery.taxonomy import Classification

USAGE = "usage: python -m recovery classify < evidence.jsonl"
EXIT_BAD_INPUT = 2


def classification_to_json(classification: Classification) -> dict[str, Any]:
    return {
        "code": classification.code.value,
        "class": classification.klass.value,
        "confidence": classification.confidence.value,
        "rule_id": classification.rule_id,
        "catalogue_version": classification.catalogue_version,
        "reset_hint": classification.reset_hint_ms,
        "fallback_eligible": classification.fallback_eligible,
    }


def run_classify(lines: Iterable[str], out: IO[str], err: IO[str]) -> int:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            evidence = evidence_from_json(json.loads(line))
        except json.JSONDecodeError as error:
            err.write(f"line {number}: not JSON ({error.msg})\n")
            return EXIT_BAD_INPUT
        except BadEvidence as error:
            err.write(redact_credentials(f"line {number}: {error}") + "\n")
            return EXIT_BAD_INPUT
        out.write(json.dumps(classification_to_json(classify(evidence))) + "\n")
        out.flush()
    return 0


def main(argv: list[str]) -> int:
    if argv != ["classify"]:
        sys.stderr.write(USAGE + "\n")
        return EXIT_BAD_INPUT
    return run_classify(sys.stdin, sys.stdout, sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
