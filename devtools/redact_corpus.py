"""The corpora redaction is measured on (tests and ``benchmarks/bench_redact.py``).

- Secrets: for every format in ``SECRET_FORMATS`` and a configured worker key, fakes
  (devtools/secret_fakes.py) generated from an injected random source, each written in a
  sentence in plain, JSON-escaped and URL-encoded form. A secret counts as removed when no
  12-character piece of it (in the form written) survives.
- Source code: files of the Python standard library and of any JavaScript on disk; redaction must
  return them unchanged.
"""

from __future__ import annotations

import json
import string
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from random import Random
from urllib.parse import quote

from devtools.secret_fakes import SECRET_FAKES
from recovery.secret_formats import SECRET_FORMATS

FORMS = ("plain", "json_escaped", "url_encoded")
WORKER_KEY_FORMAT = "configured_worker_key"
LEAK_WINDOW = 12
JAVASCRIPT_ROOTS = (
    Path("node_modules"),
    Path("/usr/lib/node_modules"),
    Path("/usr/local/lib/node_modules"),
)


@dataclass(frozen=True, slots=True)
class SecretCase:
    format: str
    form: str
    text: str
    secret: str  # as written in ``text`` (encoded like it)
    known_values: tuple[str, ...] = ()

    def leaked(self, redacted: str) -> bool:
        pieces = {
            self.secret[i : i + LEAK_WINDOW] for i in range(len(self.secret) - LEAK_WINDOW + 1)
        }
        return any(piece in redacted for piece in pieces or {self.secret})


def _encoded(text: str, form: str) -> str:
    if form == "json_escaped":
        # A JSON document quoted inside another JSON string: quotes arrive as \" (and \\n).
        return json.dumps(json.dumps({"message": text}))[1:-1]
    if form == "url_encoded":
        return quote(text, safe="")
    return text


def _escaped(fragment: str, form: str) -> str:
    # How a fragment of a text reads once the whole text was encoded in ``form``.
    if form == "json_escaped":
        return json.dumps(json.dumps(fragment)[1:-1])[1:-1]
    return _encoded(fragment, form)


def secret_cases(rng: Random, *, per_format: int = 3) -> list[SecretCase]:
    cases: list[SecretCase] = []
    for _ in range(per_format):
        for fmt in SECRET_FORMATS:
            written, secret = SECRET_FAKES[fmt.name](rng)  # KeyError: a format without a fake
            cases.append(_case(fmt.name, written, secret, rng))
        worker_key = "kdv-" + "".join(
            rng.choice(string.ascii_letters + string.digits) for _ in range(28)
        )
        cases.append(
            _case(
                WORKER_KEY_FORMAT,
                f"gateway said: bad key {worker_key}.",
                worker_key,
                rng,
                (worker_key,),
            )
        )
    return [
        SecretCase(c.format, form, _encoded(c.text, form), _escaped(c.secret, form), c.known_values)
        for c in cases
        for form in FORMS
    ]


def _case(
    name: str, written: str, secret: str, rng: Random, known: tuple[str, ...] = ()
) -> SecretCase:
    before = rng.choice(["Here it is: ", "config was ", "", "> ", "Error: "])
    after = rng.choice([" and then run the tests.", "", "\n", ", retrying."])
    return SecretCase(name, "plain", f"{before}{written}{after}", secret, known)


def stdlib_files(*, sample: int) -> list[Path]:
    """Every n-th ``.py`` file of the standard library, a fixed sample (sorted, evenly spaced)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.rglob("*.py") if "site-packages" not in p.parts)
    step = max(1, len(files) // sample)
    return files[::step][:sample]


def javascript_files(*, sample: int) -> list[Path]:
    files: list[Path] = []
    for root in JAVASCRIPT_ROOTS:
        if root.is_dir():
            files.extend(sorted(root.rglob("*.js")))
    step = max(1, len(files) // sample) if files else 1
    return files[::step][:sample]


def read_source(path: Path) -> Iterator[str]:
    try:
        yield path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return
