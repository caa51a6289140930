"""An ACP target names an agent kind of the registry; what its launch gets (command, working
directory, private home, environment, config files), and what happens when it can't start."""

from __future__ import annotations

import io
import json
import os
import sys
import threading
import tomllib

import pytest
from celery.signals import worker_process_shutdown
from django.core.management import call_command
from django.db import connection

import sessions_app.tasks  # noqa: F401 -- connects the worker's shutdown handlers, as Celery does
from devtools.eventually import eventually
from kandev_web.agent_env import acp_inherited_env
from recovery.providers.acp.process import agent_processes_live
from sessions_app.agent.registry import AGENTS
from sessions_app.agent.runner import generation_run
from sessions_app.agent.sandbox import SEEN_HOME, SEEN_WORKSPACE
from sessions_app.agent.targets import MOCK_PLACEHOLDER_KEY, TargetUnusable, acp_config_for
from sessions_app.errors import InvalidInput
from sessions_app.models import Message, ProviderTarget
from sessions_app.services import prompt_submit, session_create, target_create
from tests.integration.acp_app.conftest import event_kinds, run_prompt

pytestmark = pytest.mark.django_db(transaction=True)

WORKER_ENV = {
    "PATH": "/usr/bin",
    "LANG": "C.UTF-8",
    "DATABASE_URL": "postgresql://postgres:hunter2@db/kandev",
    "REDIS_URL": "redis://127.0.0.1:6379/0",
    "SECRET_KEY": "not-for-agents",
    "KANDEV_DEMO_PASSWORD": "not-for-agents-either",
    "OTHER_PROVIDER_KEY": "sk-other-000",
    "KANDEV_MOCK_ACP_STATE": "/tmp/state.json",
    "OPENROUTER_API_KEY": "sk-ant-test-000",  # any variable the operator allows, for any agent
}
WORKER_SECRETS = ("hunter2", "not-for-agents", "sk-other-000", "redis://")


def target(agent_kind: str, **fields) -> ProviderTarget:
    return ProviderTarget(
        name="Agent", kind=ProviderTarget.Kind.ACP, agent_kind=agent_kind, **fields
    )


@pytest.fixture(autouse=True)
def workdir(tmp_path, settings):
    settings.KANDEV_ACP_WORKDIR = tmp_path
    settings.KANDEV_ACP_INHERITED_ENV = acp_inherited_env(WORKER_ENV)
    return tmp_path


def test_every_agent_kind_a_target_can_name_has_a_launcher():
    assert set(AGENTS) == set(ProviderTarget.AgentKind.values)


def agent_command(config) -> tuple[str, ...]:
    """The agent's own command line, after its sandbox's (bwrap ... entry.sh [forwards] --)."""
    return config.command[len(config.command) - config.command[::-1].index("--") :]


def test_the_mock_agent_runs_from_this_interpreter_in_the_sessions_own_directory(tmp_path):
    config = acp_config_for(target("mock"), session_id=4)

    assert config.command[0] == str(settings_bwrap())
    assert agent_command(config) == (
        sys.executable,
        "-m",
        "recovery.mock.acp_agent",
        "--conversation",
        "session-4",
    )
    assert (config.cwd, config.host_cwd) == (SEEN_WORKSPACE, str(tmp_path / "session-4"))
    assert (tmp_path / "session-4").is_dir()


def settings_bwrap() -> str:
    from django.conf import settings

    return settings.KANDEV_AGENT_BWRAP


@pytest.mark.parametrize("agent_kind", ["claude", "codex", "gemini"])
def test_a_real_agent_gets_its_key_a_private_home_and_nothing_else_of_the_worker(
    agent_kind, tmp_path, settings
):
    config = acp_config_for(
        target(agent_kind, api_key_env="OPENROUTER_API_KEY", base_url="http://127.0.0.1:8765/x"),
        session_id=7,
        environ=WORKER_ENV,
    )

    env = dict(config.env)
    assert env["HOME"] == SEEN_HOME
    assert env["TMPDIR"].startswith(env["HOME"])
    assert (tmp_path / "home-7" / "tmp").is_dir()
    assert env["PATH"] == settings.KANDEV_AGENT_PATH
    assert "sk-ant-test-000" in env.values()
    assert not [name for name in env if name in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY")]
    assert not [value for value in env.values() if any(s in value for s in WORKER_SECRETS)]
    assert "sk-ant-test-000" not in repr(config)
    assert (config.cwd, config.host_cwd) == (SEEN_WORKSPACE, str(tmp_path / "session-7"))
    assert agent_command(config)[-1 if agent_kind != "gemini" else -2].startswith(
        str(settings.KANDEV_AGENT_PACKAGES)
    )


def test_claude_code_has_its_own_retries_fallback_telemetry_and_updates_off(tmp_path):
    env = acp_config_for(
        target("claude", base_url="http://127.0.0.1:8765", model="claude-opus-4-1"), session_id=1
    ).env

    assert env["CLAUDE_CODE_MAX_RETRIES"] == "0"
    assert env["CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK"] == "1"
    assert env["DISABLE_TELEMETRY"] == env["DISABLE_AUTOUPDATER"] == "1"
    assert env["DISABLE_ERROR_REPORTING"] == env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert env["CLAUDE_CONFIG_DIR"] == f"{SEEN_HOME}/.claude"
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8765"
    assert env["ANTHROPIC_MODEL"] == "claude-opus-4-1"
    assert env["ANTHROPIC_API_KEY"] == MOCK_PLACEHOLDER_KEY  # loopback mock, no key named


def test_codex_gets_a_config_toml_with_one_provider_and_its_retries_off(tmp_path):
    config = acp_config_for(
        target("codex", base_url="http://127.0.0.1:8765/v1", api_key_env="OPENROUTER_API_KEY"),
        session_id=2,
        environ=WORKER_ENV,
    )

    codex_home = tmp_path / "home-2" / ".codex"
    written = tomllib.loads((codex_home / "config.toml").read_text())
    provider = written["model_providers"][written["model_provider"]]
    assert config.env["CODEX_HOME"] == f"{SEEN_HOME}/.codex"
    assert config.env[provider["env_key"]] == "sk-ant-test-000"
    assert provider["base_url"] == "http://127.0.0.1:8765/v1"
    assert provider["wire_api"] == "responses"
    assert (provider["request_max_retries"], provider["stream_max_retries"]) == (0, 0)
    assert written["check_for_update_on_startup"] is False
    assert written["analytics"] == {"enabled": False}
    assert written["model"] == "gpt-5.4"
    assert (codex_home / "config.toml").stat().st_mode & 0o077 == 0


def test_gemini_gets_a_settings_file_with_one_attempt_and_no_telemetry(tmp_path):
    config = acp_config_for(
        target("gemini", base_url="http://127.0.0.1:8765", model="gemini-2.5-flash"), session_id=3
    )

    written = json.loads((tmp_path / "home-3" / ".gemini" / "settings.json").read_text())
    assert agent_command(config)[-1] == "--acp"
    assert written["general"]["maxAttempts"] == 1
    assert written["general"]["enableAutoUpdate"] is False
    assert written["telemetry"] == {"enabled": False}
    assert written["privacy"] == {"usageStatisticsEnabled": False}
    assert written["model"] == {"name": "gemini-2.5-flash"}
    assert config.env["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:8765"
    assert config.env["GEMINI_API_KEY"] == MOCK_PLACEHOLDER_KEY


def test_a_real_agent_aimed_at_a_real_provider_without_a_key_name_is_refused():
    with pytest.raises(TargetUnusable) as refused:
        acp_config_for(target("claude"), session_id=1, environ=WORKER_ENV)

    assert refused.value.code == "missing_credentials"


@pytest.mark.parametrize("agent_kind", ["", "bash", "sh -c 'id'"])
def test_a_target_without_a_known_agent_kind_is_refused(agent_kind):
    with pytest.raises(TargetUnusable) as refused:
        acp_config_for(target(agent_kind), session_id=1)

    assert refused.value.code == "provider_not_configured"


def test_a_named_key_that_is_not_set_is_refused_without_starting_anything():
    with pytest.raises(TargetUnusable) as refused:
        acp_config_for(target("codex", api_key_env="OPENAI_API_KEY"), session_id=1, environ={})

    assert refused.value.code == "missing_credentials"
    assert "OPENAI_API_KEY" not in refused.value.detail  # a card never names the variable


@pytest.mark.parametrize(
    "fields",
    [
        {"base_url": "http://127.0.0.2:9"},  # a host the operator did not list
        {"api_key_env": "DATABASE_URL", "base_url": "http://127.0.0.1:8765"},  # not a key variable
    ],
)
def test_an_agent_target_the_allowlists_refuse_is_never_started(fields):
    with pytest.raises(TargetUnusable) as refused:
        acp_config_for(target("claude", **fields), session_id=1, environ=WORKER_ENV)

    assert refused.value.code == "provider_not_configured"
    with pytest.raises(InvalidInput):
        target_create(name="Refused", kind=ProviderTarget.Kind.ACP, agent_kind="claude", **fields)


def test_creating_an_acp_target_needs_a_registry_kind():
    with pytest.raises(InvalidInput) as refused:
        target_create(name="Shell", kind=ProviderTarget.Kind.ACP, agent_kind="sh")

    assert refused.value.field == "agent_kind"
    assert not ProviderTarget.objects.filter(name="Shell").exists()


def test_an_agent_that_can_not_be_started_fails_the_prompt_without_a_notice(
    chat, owner, clock, settings, tmp_path
):
    settings.KANDEV_AGENT_PACKAGES = tmp_path / "no-node-modules"
    settings.KANDEV_AGENT_NODE = str(tmp_path / "no-node")
    ProviderTarget.objects.filter(pk=chat.target_id).update(
        agent_kind="claude", base_url="http://127.0.0.1:8765"
    )

    generation = run_prompt(chat, owner, "hello", clock)

    assert generation.state == "failed"
    assert "could not be started" in generation.error_message
    assert event_kinds(chat, "notice.") == []


def test_an_agent_that_crashes_mid_prompt_fails_and_keeps_its_stderr_tail(chat, owner, clock):
    generation = run_prompt(chat, owner, "/crash now", clock)

    assert generation.state == "failed"
    assert "simulated crash" in generation.error_message
    assert event_kinds(chat, "notice.") == []
    assert not Message.objects.filter(session=chat).exclude(role="user").exists()


def test_the_seeded_acp_mock_agent_target_answers_a_prompt(owner, clock):
    call_command("seed_demo", password="demo-pass-1", stdout=io.StringIO())
    call_command("seed_demo", password="demo-pass-1", stdout=io.StringIO())
    seeded = ProviderTarget.objects.get(name="ACP mock agent")
    chat = session_create(owner=owner, target=seeded, title="Seeded agent")

    generation = run_prompt(chat, owner, "are you there", clock)

    assert seeded.agent_kind == "mock"
    assert generation.state == "succeeded"
    assert Message.objects.get(session=chat, role="assistant").text == (
        "Mock agent reply to: are you there"
    )


def test_the_demo_seeds_one_target_per_agent_kind_on_the_mock_provider(settings):
    call_command("seed_demo", password="demo-pass-1", stdout=io.StringIO())
    call_command("seed_demo", password="demo-pass-1", stdout=io.StringIO())

    seeded = {t.agent_kind: t for t in ProviderTarget.objects.filter(kind=ProviderTarget.Kind.ACP)}
    mock = settings.KANDEV_MOCK_PROVIDER_URL
    assert set(seeded) == set(ProviderTarget.AgentKind.values)
    assert seeded["claude"].base_url == seeded["gemini"].base_url == mock
    assert seeded["codex"].base_url == f"{mock}/v1"
    assert all(t.api_key_env == "" for t in seeded.values())


def test_a_worker_process_shutting_down_ends_the_agent_it_is_running(chat, owner, clock):
    generation = prompt_submit(session=chat, user=owner, text="/slow:2000 one two three four")

    def work() -> None:
        try:
            generation_run(generation_id=generation.pk, clock=clock)
        finally:
            connection.close()

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    eventually(
        Message.objects.filter(session=chat, role="assistant").exists,
        timeout=60,
        what="the agent's answer",
    )
    assert len(agent_processes_live()) == 1

    worker_process_shutdown.send(sender=None, pid=os.getpid(), exitcode=0)
    worker.join(30)

    generation.refresh_from_db()
    assert not worker.is_alive()
    assert agent_processes_live() == frozenset()
    assert generation.state == "failed"  # the agent died mid-answer: handed back, never a success
