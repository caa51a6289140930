"""Schemathesis over /api/openapi.json against a live Daphne on 127.0.0.1: every check, a few
thousand requests, and no 500, no undocumented status, no answer that breaks the schema, no
schema-valid request refused as invalid.

Two runs: first every operation but token revocation, then revocation alone, so the fuzzer cannot
revoke its own token half-way and spend the rest of the run on 401s.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from sessions_app.api_auth import api_token_create
from sessions_app.models import ProviderTarget
from sessions_app.services import session_create
from tests.integration.live_daphne import live_daphne

pytestmark = [
    pytest.mark.fuzz,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(1800),
]

SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"
# 150 per operation is about 2,700 requests, some five minutes on a loaded 2-core machine.
EXAMPLES_PER_OPERATION = int(os.environ.get("KANDEV_FUZZ_EXAMPLES", "150"))
SEED = os.environ.get("KANDEV_FUZZ_SEED", "9")


def schemathesis_run(url: str, token: str, workdir: Path, *selection: str) -> str:
    run = subprocess.run(
        [
            str(SCHEMATHESIS),
            "run",
            f"{url}/api/openapi.json",
            *selection,
            "--checks",
            "all",
            "--max-examples",
            str(EXAMPLES_PER_OPERATION),
            "--seed",
            SEED,
            "--workers",
            "1",
            "--header",
            f"Authorization: Bearer {token}",
            "--generation-database",
            "none",
            "--request-timeout",
            "30",
            "--no-color",
        ],
        cwd=workdir,  # schemathesis writes a cache directory where it runs
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert run.returncode == 0, run.stdout[-20000:] + run.stderr[-5000:]
    return run.stdout


def requests_made(report: str) -> int:
    match = re.search(r"(\d+) generated", report)
    assert match, report[-3000:]
    return int(match[1])


def test_the_api_answers_every_generated_request_as_its_openapi_document_says(
    tmp_path, celery_queue
):
    user = get_user_model().objects.create_user(username="fuzzer")
    target = ProviderTarget.objects.create(name="Mock", kind=ProviderTarget.Kind.MOCK, model="m")
    session_create(owner=user, target=target, title="Fuzzed")
    token = api_token_create(user=user, label="fuzz")
    # Prompts enqueue runs on this run's own queue, which no worker consumes and the fixture
    # empties.
    env = {"KANDEV_CELERY_QUEUE": celery_queue}

    with live_daphne(env=env, log_path=tmp_path / "daphne.log") as url:
        everything = schemathesis_run(url, token, tmp_path, "--exclude-method", "DELETE")
        revocation = schemathesis_run(url, token, tmp_path, "--include-method", "DELETE")

    document = Client().get("/api/openapi.json").json()
    methods = [method for operations in document["paths"].values() for method in operations]
    deletes = methods.count("delete")
    assert f"Tested: {len(methods) - deletes}" in everything
    assert f"Tested: {deletes}" in revocation
    total = requests_made(everything) + requests_made(revocation)
    print(f"schemathesis: {total} requests, no failures")
    assert total >= 10 * EXAMPLES_PER_OPERATION, total  # a few thousand at the default
