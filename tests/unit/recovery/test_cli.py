"""`python -m recovery classify`: one evidence JSON per line in, one classification per line out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from recovery.classify import CATALOGUE_VERSION

ROOT = Path(__file__).resolve().parents[3]


def run_cli(stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "recovery", *(args or ("classify",))],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=30,
        check=False,
    )


def test_it_prints_one_classification_per_evidence_line():
    lines = [
        {
            "source": "http",
            "status": 529,
            "excerpt": (
                '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
            ),
        },
        {"source": "acp_chunk", "excerpt": "The API was overloaded earlier so I retried."},
        {
            "source": "acp_chunk",
            "excerpt": (
                "You have reached your current quota for this period. "
                "Your limit will reset in 3 hours."
            ),
        },
    ]
    result = run_cli("".join(json.dumps(line) + "\n" for line in lines))

    assert result.returncode == 0, result.stderr
    outputs = [json.loads(line) for line in result.stdout.splitlines()]
    assert outputs[0] == {
        "code": "provider_overloaded",
        "class": "transient",
        "confidence": "high",
        "rule_id": "anthropic.overloaded_error.v1",
        "catalogue_version": CATALOGUE_VERSION,
        "reset_hint": None,
        "fallback_eligible": True,
    }
    assert (outputs[1]["code"], outputs[1]["rule_id"]) == ("unclassified", None)
    assert (outputs[2]["code"], outputs[2]["reset_hint"]) == ("quota_limited", 10_800_000)


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ('{"source": "http", "excerpt": "x", "colour": "red"}', "'colour'"),
        ('{"source": "carrier-pigeon", "excerpt": "x"}', "'source'"),
        ('{"source": "http", "excerpt": "x", "status": "529"}', "'status'"),
        ('{"source": "http", "excerpt": "x", "terminal_seen": "yes"}', "'terminal_seen'"),
        ('{"source": "http"}', "'excerpt'"),
        ('{"excerpt": "x"}', "'source'"),
        ("not json", "not JSON"),
    ],
)
def test_a_bad_line_gets_a_one_line_error_naming_it_and_a_non_zero_exit(line, named):
    result = run_cli(line + "\n")

    assert result.returncode != 0
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("line 1: ") and named in result.stderr


def test_it_redacts_the_excerpt_before_classifying_and_never_echoes_it():
    line = {
        "source": "http",
        "status": 401,
        "excerpt": "invalid x-api-key: sk-ant-test-000AAAABBBBCCCCDDDD",
    }
    result = run_cli(json.dumps(line) + "\n")

    assert json.loads(result.stdout)["code"] == "auth_required"
    assert "sk-ant-test-000AAAABBBBCCCCDDDD" not in result.stdout + result.stderr


def test_a_bad_value_error_does_not_echo_a_secret():
    result = run_cli(
        json.dumps({"source": "sk-ant-test-000AAAABBBBCCCCDDDD", "excerpt": ""}) + "\n"
    )
    assert result.returncode != 0
    assert "AAAABBBBCCCCDDDD" not in result.stderr


def test_an_unknown_command_prints_usage():
    result = run_cli("", "explain")
    assert result.returncode != 0 and "usage" in result.stderr
