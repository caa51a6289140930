"""Codex's JSON-RPC ``data`` text (it quotes URLs and provider text) never reaches the
transcript, the logs or the database: recorded Codex failures, with a sentinel planted in
``data.message``, replayed through the app by a fake agent kind, classify by their structured
kind and leave no trace of the text anywhere."""

from __future__ import annotations

import json
import logging
import sys

import pytest
from django.apps import apps
from django.db import models

from recovery.providers.acp.recorded import RECORDED_DIR
from sessions_app.agent import registry
from sessions_app.agent.registry import AgentLaunch, AgentSpec
from sessions_app.models import PromptGeneration, ProviderTarget
from tests.integration.acp_app.conftest import run_prompt

pytestmark = pytest.mark.django_db(transaction=True)

SENTINEL = "sentinel-data-3c1e"


@pytest.fixture
def codex_replay(tmp_path, monkeypatch, acp_target, settings):
    """A registry kind whose agent replays a recorded Codex failure with the sentinel planted."""

    def plant(case: str) -> None:
        fixture = json.loads((RECORDED_DIR / f"codex-{case}.json").read_text())
        data = fixture["frames"][-1]["error"]["data"]
        data["message"] = f"{data['message']} url: http://127.0.0.1:9/{SENTINEL}/v1/responses"
        path = tmp_path / "planted.json"
        path.write_text(json.dumps(fixture))
        command = (sys.executable, "-m", "recovery.mock.acp_replay", str(path))
        env = {"PYTHONPATH": str(settings.BASE_DIR), "TMPDIR": "/tmp"}
        # The recording is bound into the agent's sandbox read-only, beside its Python.
        launch = AgentLaunch(command, env, runtime=(*registry.mock_runtime(), path))
        agents = dict(registry.AGENTS)
        agents["mock"] = AgentSpec(
            "mock", "Codex replay", "gpt-5.4", lambda r: launch, needs_key=False
        )
        monkeypatch.setattr(registry, "AGENTS", agents)

    ProviderTarget.objects.filter(pk=acp_target.pk).update(agent_kind="mock")
    return plant


def database_text() -> str:
    """Every text and JSON column of every row the app and the ladder wrote."""
    found = []
    for model in apps.get_models():
        if model._meta.app_label not in ("sessions_app", "ladder"):
            continue
        fields = [
            f.attname
            for f in model._meta.concrete_fields
            if isinstance(f, (models.CharField, models.TextField, models.JSONField))
        ]
        for row in model.objects.values_list(*fields):
            found.append(json.dumps(row, default=str))
    return "\n".join(found)


@pytest.mark.parametrize(
    ("case", "state", "code"),
    [
        ("overloaded", PromptGeneration.State.WAITING_RETRY, None),
        ("after-text", PromptGeneration.State.FAILED, "provider_overloaded"),
        ("cut-before-output", PromptGeneration.State.WAITING_RETRY, None),
    ],
)
def test_codex_data_text_reaches_no_transcript_log_or_row(
    codex_replay, chat, owner, clock, caplog, case, state, code
):
    codex_replay(case)
    caplog.set_level(logging.DEBUG)

    generation = run_prompt(chat, owner, "write the report", clock)

    assert generation.state == state
    if code:
        assert generation.error_code == code
    assert SENTINEL not in database_text()
    assert SENTINEL not in caplog.text
    assert "127.0.0.1:9" not in database_text()
