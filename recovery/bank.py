"""The catalogue's accuracy bank: real-shaped provider strings and prose, each with its code.

The entries live in ``catalogue/bank/*.jsonl``. Fixtures in ``catalogue/fixtures/`` pin one rule
each; the bank measures the catalogue as a whole, the way
traffic reaches it. Each entry is what arrived on one wire (an HTTP error response, an error
object inside a stream, an ACP prompt's JSON-RPC error, a chunk an agent printed, an agent's
stderr before it exited), and it becomes Evidence through the same decoders the adapters use,
so the figure covers decoding as well as the rules. Entries are written from the providers'
documented shapes and sanitised: no real key, account or request id.

Run ``python -m recovery.bank`` for the accuracy figure and every miss.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recovery.classify import classify
from recovery.clock import FakeClock
from recovery.providers.acp.agent_events import Correlation
from recovery.providers.acp.evidence import evidence_start
from recovery.providers.acp.failure import TerminalError, failure_build
from recovery.providers.failures import status_failure, stream_error_failure
from recovery.redact import redact_diagnostic
from recovery.taxonomy import Evidence, Source

BANK_DIR = Path(__file__).parent / "catalogue" / "bank"
WIRES = ("http", "sse", "acp_prompt", "acp_chunk", "exit")
_CLOCK_NOW_S = 1_800_000_000.0
_CORRELATION = Correlation(session_id="bank", execution_id="bank", generation=1)


class BadBankEntry(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class BankEntry:
    name: str  # file:line
    family: str  # who sends it: "gemini", "bedrock", "prose", ...
    wire: str
    row: dict[str, Any]
    expect: str  # the Code value it must classify as

    def evidence(self) -> Evidence:
        return evidence_of(self.wire, self.row)


@dataclass(frozen=True, slots=True)
class Outcome:
    entry: BankEntry
    got: str

    @property
    def correct(self) -> bool:
        return self.got == self.entry.expect


def load_bank(directory: Path = BANK_DIR) -> tuple[BankEntry, ...]:
    entries = []
    for path in sorted(directory.glob("*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            name = f"{path.name}:{number}"
            row = json.loads(line)
            if row.get("wire") not in WIRES:
                raise BadBankEntry(f"{name}: wire must be one of {', '.join(WIRES)}")
            if not isinstance(row.get("expect"), str) or not isinstance(row.get("family"), str):
                raise BadBankEntry(f"{name}: needs a family and an expected code")
            entries.append(
                BankEntry(
                    name=name,
                    family=row["family"],
                    wire=row["wire"],
                    row=row,
                    expect=row["expect"],
                )
            )
    return tuple(entries)


def evidence_of(wire: str, row: dict[str, Any]) -> Evidence:
    """The Evidence an adapter would build from what ``row`` says arrived on ``wire``."""
    provider = row.get("provider", "openai")
    model = row.get("model", "model-sanitised")
    if wire == "http":
        body = row["body"]
        return status_failure(
            provider_id=provider,
            model=model,
            status=row["status"],
            headers={k.lower(): v for k, v in row.get("headers", {}).items()},
            body=body if isinstance(body, str) else json.dumps(body),
            clock=FakeClock(_CLOCK_NOW_S),
        ).evidence
    if wire == "sse":
        return stream_error_failure(
            provider_id=provider, model=model, payload=row["payload"], status=row.get("status")
        ).evidence
    if wire == "acp_prompt":
        terminal = TerminalError(
            source=Source.ACP_PROMPT,
            message=row["message"],
            jsonrpc_code=row["code"],
            data=row.get("data"),
        )
    elif wire == "exit":
        terminal = TerminalError(
            source=Source.EXIT, message=f"{row['text']}\nthe agent exited with status 1"
        )
    else:  # a chunk is classified as it stands, as the diagnostic marker reads it
        return Evidence(source=Source.ACP_CHUNK, excerpt=redact_diagnostic(row["text"]))
    return failure_build(
        terminal=terminal,
        attempt=evidence_start(correlation=_CORRELATION),
        correlation=_CORRELATION,
        provider_id=row.get("agent"),
        model_id=None,
    ).evidence


def run_bank(entries: Iterable[BankEntry]) -> list[Outcome]:
    return [Outcome(entry, str(classify(entry.evidence()).code)) for entry in entries]


def accuracy(outcomes: list[Outcome]) -> float:
    return sum(outcome.correct for outcome in outcomes) / len(outcomes) if outcomes else 0.0


def main(argv: list[str] | None = None) -> int:
    outcomes = run_bank(load_bank())
    misses = [outcome for outcome in outcomes if not outcome.correct]
    for outcome in misses:
        print(
            f"MISS {outcome.entry.name} [{outcome.entry.family}] "
            f"expected {outcome.entry.expect}, got {outcome.got}"
        )
    families = sorted({outcome.entry.family for outcome in outcomes})
    for family in families:
        mine = [outcome for outcome in outcomes if outcome.entry.family == family]
        print(f"{family:>12}: {sum(o.correct for o in mine)}/{len(mine)}")
    right = len(outcomes) - len(misses)
    print(f"bank accuracy: {right}/{len(outcomes)} = {accuracy(outcomes):.1%}")
    return 0 if not misses else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
