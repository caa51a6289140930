"""An ACP target's command line, working directory and environment, and what happens when it
can't be started."""

from __future__ import annotations

import io
import shlex
import sys

import pytest
from django.core.management import call_command

from kandev_web.settings import acp_inherited_env
from sessions_app.agent.targets import TargetUnusable, acp_config_for
from sessions_app.models import Message, ProviderTarget
from sessions_app.services import session_create
from tests.integration.acp_app.conftest import event_kinds, run_prompt

pytestmark = pytest.mark.django_db(transaction=True)

WORKER_ENV = {
    "PATH": "/usr/bin",
    "LANG": "C.UTF-8",
    "DATABASE_URL": "postgresql://postgres:hunter2@db/kandev",
    "DJANGO_SECRET_KEY": "not-for-agents",
    "KANDEV_MOCK_ACP_STATE": "/tmp/state.json",
    "AGENT_KEY": "sk-ant-test-000",
}


def target(command: str, **fields) -> ProviderTarget:
    return ProviderTarget(name="Agent", kind=ProviderTarget.Kind.ACP, command=command, **fields)


@pytest.fixture(autouse=True)
def workdir(tmp_path, settings):
    settings.KANDEV_ACP_WORKDIR = tmp_path
    return tmp_path


def test_the_command_is_split_shell_style(tmp_path):
    config = acp_config_for(
        target("npx -y '@zed-industries/claude-code-acp' --flag \"two words\""), session_id=4
    )

    assert config.command == ("npx", "-y", "@zed-industries/claude-code-acp", "--flag", "two words")
    assert config.cwd == str(tmp_path / "session-4")
    assert (tmp_path / "session-4").is_dir()


def test_the_agent_gets_only_allowlisted_variables_and_its_own_key(settings):
    settings.KANDEV_ACP_INHERITED_ENV = acp_inherited_env(WORKER_ENV)
    config = acp_config_for(target("agent", api_key_env="AGENT_KEY"), session_id=1, environ=WORKER_ENV)

    assert dict(config.env) == {
        "LANG": "C.UTF-8",
        "KANDEV_MOCK_ACP_STATE": "/tmp/state.json",
        "AGENT_KEY": "sk-ant-test-000",
        "PYTHONPATH": str(settings.BASE_DIR),
    }
    assert "sk-ant-test-000" not in repr(config)


def test_the_projects_import_path_comes_after_the_workers_own(settings):
    settings.KANDEV_ACP_INHERITED_ENV = acp_inherited_env({"PYTHONPATH": "/opt/lib"})
    config = acp_config_for(target("agent"), session_id=1)

    assert config.env["PYTHONPATH"].split(":") == ["/opt/lib", str(settings.BASE_DIR)]


@pytest.mark.parametrize("command", ["", "   ", "agent 'unterminated"])
def test_an_unusable_command_line_is_refused(command, tmp_path):
    with pytest.raises(TargetUnusable) as refused:
        acp_config_for(target(command), session_id=1)

    assert refused.value.code == "provider_not_configured"


def test_a_named_key_that_is_not_set_is_refused_without_starting_anything(tmp_path):
    with pytest.raises(TargetUnusable) as refused:
        acp_config_for(target("agent", api_key_env="MISSING_KEY"), session_id=1, environ={})

    assert refused.value.code == "missing_credentials"
    assert "MISSING_KEY" not in refused.value.detail  # a card never names the variable


def test_an_agent_that_can_not_be_started_fails_the_prompt_without_a_notice(
    chat, owner, clock, acp_target
):
    ProviderTarget.objects.filter(pk=acp_target.pk).update(
        command="/nonexistent/kandev-agent --acp"
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

    assert ProviderTarget.objects.filter(kind="acp").count() == 1
    assert shlex.split(seeded.command) == [sys.executable, "-m", "recovery.mock.acp_agent"]
    assert generation.state == "succeeded"
    assert Message.objects.get(session=chat, role="assistant").text == (
        "Mock agent reply to: are you there"
    )
