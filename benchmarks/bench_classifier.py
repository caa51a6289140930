"""Classifier cost per evidence: ordinary prose (rejected by the pre-check) and matching signatures.

Run: ``python -m benchmarks.bench_classifier``. Target: p99 under 50 µs per classification.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from recovery.classify import classify
from recovery.taxonomy import Evidence, Source

TARGET_P99_US = 50.0
ITERATIONS = 5_000
WARMUP = 200

PROSE = Evidence(
    source=Source.ACP_CHUNK,
    excerpt=(
        "I refactored the retry helper so that it reads the delays from settings, added tests "
        "for the parser, and updated the README with the new environment variables. The API "
        "was overloaded earlier so I retried once; everything is green on CI now.\n" * 3
    ),
)
SIGNATURES = {
    "sse overloaded_error in a 200": Evidence(
        source=Source.SSE,
        status=200,
        excerpt=json.dumps(
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        ),
    ),
    "acp claude 529 (json-rpc)": Evidence(
        source=Source.ACP_PROMPT,
        excerpt=json.dumps(
            {
                "code": -32603,
                "message": "Internal error: API Error: 529 Overloaded. This is a server-side issue, "
                "usually temporary — try again in a moment.",
                "data": {"errorKind": "server_error"},
            }
        ),
    ),
    "cursor retriable frame": Evidence(
        source=Source.ACP_CHUNK, excerpt="Error: RetriableError: [unavailable] PING timed out"
    ),
}


def _measure(name: str, call: Callable[[], object]) -> dict[str, object]:
    for _ in range(WARMUP):
        call()
    samples = []
    for _ in range(ITERATIONS):
        started = time.perf_counter_ns()
        call()
        samples.append(time.perf_counter_ns() - started)
    samples.sort()
    p50_us = samples[len(samples) // 2] / 1000
    p99_us = samples[int(len(samples) * 0.99)] / 1000
    return {
        "benchmark": "classifier",
        "metric": f"{name}: p50 / p99 per evidence (n={ITERATIONS})",
        "value": f"{p50_us:.1f} / {p99_us:.1f} us",
        "target": f"p99 < {TARGET_P99_US:g} us",
        "ok": p99_us < TARGET_P99_US,
    }


def run() -> list[dict]:
    rows = [_measure("non-matching prose", lambda: classify(PROSE))]
    rows += [
        _measure(f"signature: {name}", lambda e=evidence: classify(e))
        for name, evidence in SIGNATURES.items()
    ]
    return rows


if __name__ == "__main__":
    from benchmarks.__main__ import main

    raise SystemExit(main(["bench_classifier"]))
