"""Operators ask why: ``python -m recovery classify`` < evidence.jsonl > classifications.jsonl.

``python -m recovery redact [--tier credential|diagnostic]`` < text > redacted: the credential tier
streams (each safe segment is written as soon as it is known); the diagnostic tier reads the whole
input and applies no size bound.

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
from recovery.redact import StreamRedactor, redact_credentials, redact_diagnostic
from recovery.taxonomy import Classification

USAGE = (
    "usage: python -m recovery classify < evidence.jsonl\n"
    "       python -m recovery redact [--tier credential|diagnostic] < text"
)
TIERS = ("credential", "diagnostic")
_READ_CHARS = 64 * 1024
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


def run_redact(tier: str, source: IO[str], out: IO[str]) -> int:
    if tier == "diagnostic":
        out.write(redact_diagnostic(source.read(), limit_bytes=None))
        return 0
    redactor = StreamRedactor()
    while chunk := source.read(_READ_CHARS):
        out.write(redactor.feed(chunk))
        out.flush()
    out.write(redactor.finish())
    return 0


def _redact_tier(args: list[str]) -> str | None:
    if not args:
        return "credential"
    if len(args) == 2 and args[0] == "--tier" and args[1] in TIERS:
        return args[1]
    if len(args) == 1 and args[0].startswith("--tier=") and args[0][7:] in TIERS:
        return args[0][7:]
    return None


def main(argv: list[str]) -> int:
    if argv == ["classify"]:
        return run_classify(sys.stdin, sys.stdout, sys.stderr)
    if argv[:1] == ["redact"] and (tier := _redact_tier(argv[1:])) is not None:
        # Text passes through unchanged byte for byte apart from the markers: no newline
        # translation, and undecodable bytes survive as they came.
        source = open(
            sys.stdin.fileno(),
            encoding="utf-8",
            errors="surrogateescape",
            newline="",
            closefd=False,
        )
        out = open(
            sys.stdout.fileno(),
            "w",
            encoding="utf-8",
            errors="surrogateescape",
            newline="",
            closefd=False,
        )
        with source, out:
            return run_redact(tier, source, out)
    sys.stderr.write(USAGE + "\n")
    return EXIT_BAD_INPUT


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
