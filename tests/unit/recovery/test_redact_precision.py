"""Redaction is precise (code comes back unchanged) and complete (every claimed format, in every
encoding, however the text is split into chunks)."""

from __future__ import annotations

import json
import json.decoder
import subprocess
import sys
from pathlib import Path
from random import Random
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from devtools.redact_corpus import (
    FORMS,
    WORKER_KEY_FORMAT,
    read_source,
    secret_cases,
    stdlib_files,
)
from recovery.providers.acp.agent_events import AgentText, AgentThought, AgentToolCall
from recovery.providers.acp.redaction import OutputRedactor
from recovery.providers.acp.spec import secret_env_values
from recovery.redact import (
    PEM_SEGMENT_LIMIT,
    REDACTED,
    StreamRedactor,
    redact_credentials,
    redact_diagnostic,
    worker_values_set,
)
from recovery.secret_formats import SECRET_FORMATS

ROOT = Path(__file__).resolve().parents[3]
CASES = secret_cases(Random(20261201), per_format=2)

CODE = [
    "def get(self, key: str) -> str:",
    "const token = lexer.next();",
    "<Item key={item.id} />",
    'password = input("pw: ")',
    "token = getUserSecretToken2fa(request)",
    "api_key = os.environ['OPENAI_API_KEY']",
    'headers["Authorization"] = f"Bearer {token}"',
    "secret = settings.SECRET_KEY",
    "let idToken = process.env.NPM_ID_TOKEN",
    "logTar(pkgContents, { unicode, json, key: pkgContents.name })",
    "@example(dt=datetime.min, key='America/New_York')",
    "ext='req_x509_extensions_full', key='rsa:3072'):",
    'key="-----BEGIN PRIVATE KEY-----\\nXXXX\\nXXXX\\n-----END PRIVATE KEY-----"',
    "monkey: banana; input_tokens=12, max_tokens: 1024",
    "password = 'your-password-here'",
    "token: ${GITHUB_TOKEN}",
]


@pytest.mark.parametrize("line", CODE)
def test_source_code_comes_back_unchanged(line):
    assert redact_credentials(line) == line


def test_a_sample_of_the_standard_library_comes_back_unchanged():
    files = stdlib_files(sample=60)
    assert len(files) == 60
    changed = [f.name for f in files for src in read_source(f) if redact_credentials(src) != src]
    assert changed == []


def test_every_claimed_format_is_in_the_measured_corpus_in_every_form():
    covered = {(case.format, case.form) for case in CASES}
    claimed = {fmt.name for fmt in SECRET_FORMATS} | {WORKER_KEY_FORMAT}
    assert covered == {(name, form) for name in claimed for form in FORMS}


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.format}-{c.form}")
def test_every_fake_secret_is_removed_whole_and_split_anywhere(case):
    whole = redact_credentials(case.text, known_values=case.known_values)
    assert not case.leaked(whole), whole
    assert REDACTED in whole
    for cut in range(len(case.text) + 1):
        redactor = StreamRedactor(known_values=case.known_values)
        out = redactor.feed(case.text[:cut]) + redactor.feed(case.text[cut:]) + redactor.finish()
        assert out == whole, cut


def test_the_text_around_a_secret_is_kept():
    key = "hf_" + "aB3" * 11
    text = f"Please log in with {key} and then run the tests."
    assert redact_credentials(text) == "Please log in with [REDACTED] and then run the tests."


lines = st.sampled_from([case.text for case in CASES] + CODE)


@settings(max_examples=300, deadline=None)
@given(lines, st.lists(st.integers(min_value=0, max_value=400), max_size=8))
def test_any_split_of_any_corpus_line_gives_the_whole_lines_result(line, cuts):
    points = sorted({min(cut, len(line)) for cut in cuts})
    chunks = [line[a:b] for a, b in zip([0, *points], [*points, len(line)], strict=True)]
    redactor = StreamRedactor()
    streamed = "".join(redactor.feed(chunk) for chunk in chunks) + redactor.finish()
    assert streamed == redact_credentials(line)


def test_output_is_released_as_soon_as_it_cannot_start_a_secret():
    redactor = StreamRedactor()
    assert redactor.feed("The build passed ") == "The build passed "
    assert redactor.feed("and api_key=") == "and "
    assert redactor.feed("Zq81nR4tPw0xLm3K ") == ""  # may continue; the value is held
    # A plain last word is released at once: no secret begins with it.
    assert redactor.feed("done") == "api_key=[REDACTED] done"
    assert redactor.feed(". Then sk") == ". Then "  # "sk" may begin "sk-ant-…": held
    assert redactor.feed("-ant-" + "Rk2" * 10) == ""
    assert redactor.finish() == "[REDACTED]"


def test_memory_stays_bounded_on_output_without_whitespace():
    redactor = StreamRedactor()
    released = 0
    for _ in range(200):
        released += len(redactor.feed("ab1" * 1000))
        assert redactor.held <= PEM_SEGMENT_LIMIT + 3000
    assert released + len(redactor.finish()) == 600_000


def test_a_key_streamed_in_four_character_acp_chunks_does_not_survive():
    key = "sk-proj-" + "Q9xw" * 12
    text = f"Sure. Set OPENAI_API_KEY={key} then call {key}."
    out = OutputRedactor().events(AgentText(text=text[i : i + 4]) for i in range(0, len(text), 4))
    out += OutputRedactor().flush()
    shown = "".join(event.text for event in out)

    assert "Q9xw" not in shown
    assert shown.startswith("Sure. Set OPENAI_API_KEY=[REDACTED]")


def test_held_acp_text_comes_out_before_the_next_event_in_order():
    redactor = OutputRedactor()
    events = redactor.events(
        [
            AgentThought(text="thinking about sk-ant-"),
            AgentText(text="answer"),
            AgentToolCall(id="t1", title="read", kind="read", status="pending"),
        ]
    )

    assert events == [
        AgentThought(text="thinking about "),
        AgentThought(text="sk-ant-"),
        AgentText(text="answer"),
        AgentToolCall(id="t1", title="read", kind="read", status="pending"),
    ]


def test_the_agents_configured_key_is_removed_whatever_its_format():
    env = {"PATH": "/usr/bin", "GATEWAY_KEY": "kdv-plain-lowercase-key-value", "HOME": "/root"}
    assert secret_env_values(env) == ("kdv-plain-lowercase-key-value",)
    redactor = OutputRedactor(known_values=secret_env_values(env))
    events = redactor.events(
        [AgentText(text="using kdv-plain-lower"), AgentText(text="case-key-value now")]
    )
    shown = "".join(e.text for e in [*events, *redactor.flush()])
    assert shown == "using [REDACTED] now"


def test_the_cli_redacts_stdin_in_either_tier():
    source = 'def get(self, key: str):\n    return {"token": "ghp_' + "x1Y2" * 9 + '"}\n'
    run = subprocess.run(
        [sys.executable, "-m", "recovery", "redact"],
        input=source,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=30,
        check=True,
    )
    assert run.stdout == 'def get(self, key: str):\n    return {"token": "[REDACTED]"}\n'
    diagnostic = subprocess.run(
        [sys.executable, "-m", "recovery", "redact", "--tier", "diagnostic"],
        input="at /home/me/app/x.py",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=30,
        check=True,
    )
    assert diagnostic.stdout == "at [PATH]"


WORKER_KEY = "kdvworker.Q7x2m9Lp.r4Tz8wVn"  # shaped like no known format


@pytest.fixture
def worker_key():
    worker_values_set([WORKER_KEY])
    yield WORKER_KEY
    worker_values_set([])


@pytest.mark.usefixtures("worker_key")
@pytest.mark.parametrize(
    "written",
    [WORKER_KEY, json.dumps({"k": WORKER_KEY}), quote(f"key {WORKER_KEY}", safe="")],
    ids=["plain", "json", "url-encoded"],
)
def test_the_workers_configured_key_is_removed_split_anywhere(written):
    text = f"Upstream said: {written} (retry later)"
    whole = redact_credentials(text)
    assert "Q7x2m9Lp" not in whole
    for cut in range(len(text) + 1):
        redactor = StreamRedactor()
        out = redactor.feed(text[:cut]) + redactor.feed(text[cut:]) + redactor.finish()
        assert out == whole, cut
    assert "Q7x2m9Lp" not in redact_diagnostic(text)


@pytest.mark.usefixtures("worker_key")
def test_the_workers_key_in_four_character_acp_chunks_does_not_survive():
    text = f"Your key is {WORKER_KEY}, keep it."
    redactor = OutputRedactor()  # no agent key given: the worker's own is still known
    out = redactor.events(AgentThought(text=text[i : i + 4]) for i in range(0, len(text), 4))
    shown = "".join(event.text for event in [*out, *redactor.flush()])
    assert shown == "Your key is [REDACTED], keep it."


known_lines = st.sampled_from(
    [(case.text, case.known_values) for case in CASES]
    + [(line, ()) for line in CODE]
    + [(line, ()) for line in Path(json.decoder.__file__).read_text().splitlines() if line]
)


@settings(max_examples=150, deadline=None)
@given(known_lines, st.lists(st.integers(min_value=0, max_value=400), max_size=8))
def test_any_split_of_any_corpus_line_with_its_known_values_gives_the_whole_result(entry, cuts):
    line, known = entry
    points = sorted({min(cut, len(line)) for cut in cuts})
    chunks = [line[a:b] for a, b in zip([0, *points], [*points, len(line)], strict=True)]
    redactor = StreamRedactor(known_values=known)
    streamed = "".join(redactor.feed(chunk) for chunk in chunks) + redactor.finish()
    assert streamed == redact_credentials(line, known_values=known)
