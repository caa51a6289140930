"""Redaction precision and recall, measured (issue 11).

Run: ``python -m benchmarks.bench_redact``. Two figures:
- source files changed by the credential tier, out of a fixed sample of the Python standard library
  and of the JavaScript on disk (target: 0);
- fake secrets removed, out of the generated corpus (every format in ``SECRET_FORMATS`` and a
  configured worker key, plain, JSON-escaped and URL-encoded), each redacted whole and split in two
  at every character boundary (target: 100 %).
The sample is fixed (evenly spaced files, a seeded random source), so runs compare.
"""

from __future__ import annotations

import time
from random import Random

from devtools.redact_corpus import javascript_files, read_source, secret_cases, stdlib_files
from recovery.redact import StreamRedactor, redact_credentials

STDLIB_SAMPLE = 300
JAVASCRIPT_SAMPLE = 100
SEED = 11


def _source_row() -> dict:
    started = time.perf_counter()
    files = stdlib_files(sample=STDLIB_SAMPLE) + javascript_files(sample=JAVASCRIPT_SAMPLE)
    scanned = changed = 0
    for path in files:
        for source in read_source(path):
            scanned += 1
            changed += redact_credentials(source) != source
    seconds = time.perf_counter() - started
    return {
        "metric": "source files changed (stdlib + JavaScript sample)",
        "value": f"{changed} of {scanned} ({seconds:.1f} s)",
        "target": "0",
        "ok": changed == 0 and scanned > 0,
    }


def _secrets_row() -> dict:
    cases = secret_cases(Random(SEED), per_format=3)
    trials = removed = 0
    for case in cases:
        for cut in range(len(case.text) + 1):
            redactor = StreamRedactor(known_values=case.known_values)
            out = (
                redactor.feed(case.text[:cut]) + redactor.feed(case.text[cut:]) + redactor.finish()
            )
            trials += 1
            removed += not case.leaked(out)
    share = 100.0 * removed / trials
    return {
        "metric": f"fake secrets removed ({len(cases)} texts, every split)",
        "value": f"{share:.2f} % of {trials}",
        "target": "100 %",
        "ok": removed == trials,
    }


def run() -> list[dict]:
    return [_source_row(), _secrets_row()]


if __name__ == "__main__":
    for row in run():
        print(row)
