"""The agent's sandbox, tried from the inside: a shell started exactly as an agent is (the
launcher's bubblewrap command line, with its egress bridges served) looks for what an attacker
would want, and finds only its own folder, its home and its one way out."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from recovery.providers.acp.egress import egress_bridges
from sessions_app.agent import sandbox
from sessions_app.agent.sandbox import (
    Endpoint,
    SandboxPlan,
    sandbox_command,
    url_as_seen,
)
from sessions_app.agent.targets import TargetUnusable, acp_config_for
from sessions_app.models import ProviderTarget
from tests.integration.acp_app.conftest import run_prompt

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def plan(tmp_path):
    workspace, home = tmp_path / "session-1", tmp_path / "home-1"
    workspace.mkdir()
    home.mkdir()
    (workspace / "notes.md").write_text("the agent's own notes\n")
    (tmp_path / "session-2").mkdir()
    (tmp_path / "session-2" / "private.txt").write_text("another person's prompt\n")
    return SandboxPlan(workspace=workspace, home=home)


def inside(plan: SandboxPlan, script: str, *, timeout: float = 60) -> tuple[int, str]:
    """Run ``script`` with /bin/sh in the sandbox ``plan`` describes; (exit status, output)."""
    confined = sandbox_command(plan, ("/bin/sh", "-c", script))

    async def run() -> tuple[int, str]:
        async with egress_bridges(confined.egress):
            process = await asyncio.create_subprocess_exec(
                *confined.command,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                env={"PATH": "/usr/bin:/bin"},
                cwd=str(plan.workspace),
            )
            output, _ = await asyncio.wait_for(process.communicate(), timeout)
            return process.returncode, output.decode(errors="replace")

    return asyncio.run(run())


def test_the_root_holds_only_the_system_and_the_agents_own_places(plan):
    status, output = inside(plan, "ls -1 /")

    assert status == 0
    assert set(output.split()) == {
        "bin", "dev", "etc", "home", "lib", "lib64", "proc", "run", "sbin", "tmp", "usr",
        "workspace",
    }  # fmt: skip


def test_it_works_in_its_folder_and_home_and_writes_nowhere_else(plan):
    status, output = inside(
        plan,
        "cat notes.md && echo made > /workspace/new.txt && echo kept > /home/agent/cache && "
        "id -u && (touch /usr/x 2>&1; touch /etc/x 2>&1; true)",
    )

    assert status == 0, output
    assert "the agent's own notes" in output
    assert (plan.workspace / "new.txt").read_text() == "made\n"
    assert (plan.home / "cache").read_text() == "kept\n"
    assert "1000" in output.split()
    assert output.count("Read-only file system") + output.count("Permission denied") == 2


def test_the_state_directory_the_checkout_and_other_sessions_are_absent(plan, tmp_path):
    checkout = Path(django_settings.BASE_DIR)
    status, output = inside(
        plan,
        f"for p in {checkout}/.kandev {checkout}/kandev_web {checkout}/manage.py "
        f"{tmp_path}/session-2/private.txt /workspace/../session-2 /root /var /srv; do "
        '[ -e "$p" ] && echo "VISIBLE $p"; done; cat /etc/passwd; echo done',
    )

    assert status == 0, output
    assert "VISIBLE" not in output
    assert "root:" not in output
    assert output.startswith("agent:x:1000:1000:")


def test_it_sees_its_own_processes_and_environment_only(plan, monkeypatch):
    monkeypatch.setenv("KANDEV_SANDBOX_CANARY", "worker-secret-4417")
    status, output = inside(
        plan,
        f"ls /proc | grep -c '^[0-9]'; cat /proc/{os.getpid()}/environ 2>&1; "
        "cat /proc/1/environ /proc/self/environ | tr '\\0' '\\n'",
    )

    assert status == 0, output
    assert int(output.split()[0]) <= 4  # bubblewrap's init, the shell and its commands
    assert "worker-secret-4417" not in output
    assert "No such file" in output  # the worker's pid is not in this PID namespace


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"hello from the provider"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def provider():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


REACH = """
const http = require("http");
for (const port of process.argv.slice(2)) {
  http.get(`http://127.0.0.1:${port}/`, (answer) => {
    answer.on("data", (data) => console.log(`${port}: ${data}`));
  }).on("error", (error) => console.log(`${port}: refused ${error.code}`));
}
"""


def test_its_network_reaches_its_provider_and_nothing_else_on_this_machine(plan, provider):
    # The machine's PostgreSQL and Redis listen on loopback: a confined agent must not reach
    # them (trust authentication, no password), nor the web app, nor any other port.
    allowed = SandboxPlan(
        workspace=plan.workspace, home=plan.home, endpoints=(Endpoint("127.0.0.1", provider),)
    )
    others = (5432, 6379, 5672, 8000, free_port())
    (plan.workspace / "reach.js").write_text(REACH)
    ports = " ".join(str(port) for port in (provider, *others))
    status, output = inside(allowed, f"{django_settings.KANDEV_AGENT_NODE} reach.js {ports}")

    assert status == 0, output
    assert f"{provider}: hello from the provider" in output
    for port in others:
        assert f"{port}: refused" in output, output


def test_a_privileged_port_is_listened_on_higher_up_inside():
    assert url_as_seen("https://api.anthropic.com") == "https://api.anthropic.com:10443"
    assert url_as_seen("https://api.openai.com/v1") == "https://api.openai.com:10443/v1"
    assert url_as_seen("http://127.0.0.1:8765/x") == "http://127.0.0.1:8765/x"


def test_without_bubblewrap_no_agent_starts_and_the_card_says_so(
    chat, owner, clock, settings, tmp_path, caplog
):
    settings.KANDEV_AGENT_BWRAP = str(tmp_path / "no-bwrap")
    monkey_ready = sandbox._ready
    sandbox._ready = False
    try:
        with pytest.raises(TargetUnusable) as refused:
            acp_config_for(chat.target, session_id=chat.pk)
        generation = run_prompt(chat, owner, "hello", clock)
    finally:
        sandbox._ready = monkey_ready

    assert refused.value.code == "sandbox_unavailable"
    assert generation.state == "failed"
    assert "sandbox could not be set up" in generation.error_message
    assert "bubblewrap is not installed" in caplog.text  # the operator's log says why


def test_an_operator_can_turn_confinement_off_only_loudly(chat, settings, caplog):
    settings.KANDEV_AGENT_SANDBOX = "off"
    with caplog.at_level(logging.WARNING):
        config = acp_config_for(chat.target, session_id=chat.pk)

    assert config.command[0] != settings.KANDEV_AGENT_BWRAP
    assert config.host_cwd is None
    assert "UNCONFINED" in caplog.text


def test_each_agent_kind_is_launched_inside_the_sandbox(settings):
    for kind in ProviderTarget.AgentKind.values:
        target = ProviderTarget(
            name=kind, kind=ProviderTarget.Kind.ACP, agent_kind=kind, base_url="http://127.0.0.1:9"
        )
        config = acp_config_for(target, session_id=1)
        assert config.command[0] == settings.KANDEV_AGENT_BWRAP, kind
        assert "--unshare-net" in config.command and "--unshare-pid" in config.command
