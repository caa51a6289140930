"""An attacker with an ordinary account steers each real agent (Claude Code, Codex, Gemini CLI)
with the mock provider's tool marker, in each wire's own tool-call shape, at what the worker can
see: the system's files, the state directory, the worker's environment, another person's session,
a symlink planted in the agent's own folder, a ``..`` path. None of it may reach the transcript;
a read inside the agent's working directory still works, and a shell call always reaches the app
as a permission request (refused until a person can be asked)."""

from __future__ import annotations

import json
import os
import secrets
import threading
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection

from devtools.eventually import eventually
from sessions_app.agent.targets import acp_config_for
from sessions_app.approvals.models import Approval
from sessions_app.approvals.services import approval_decide
from sessions_app.models import Message, SessionEvent
from sessions_app.services import session_create
from tests.agents.conftest import REAL_AGENTS, AgentChat, agent_chat, run_prompt

pytestmark = [pytest.mark.agents, pytest.mark.django_db(transaction=True), pytest.mark.timeout(900)]

# How each agent's model asks to read a file and to run a command, as the mock sends it on the
# agent's wire (Anthropic tool_use, OpenAI Responses function_call, Gemini functionCall).
READ = {
    "claude": lambda path: f"Read {json.dumps({'file_path': path})}",
    "codex": lambda path: f"exec_command {json.dumps({'cmd': f'cat {path}'})}",
    "gemini": lambda path: f"read_file {json.dumps({'file_path': path})}",
}
SHELL = {
    "claude": lambda command: f"Bash {json.dumps({'command': command})}",
    "codex": lambda command: f"exec_command {json.dumps({'cmd': command})}",
    "gemini": lambda command: f"run_shell_command {json.dumps({'command': command})}",
}


def transcript(session) -> str:
    """Everything a viewer could ever be sent about the session: rows and the event log."""
    rows = Message.objects.filter(session=session).values_list("text", "metadata")
    events = SessionEvent.objects.filter(session=session).values_list("payload", flat=True)
    return "\n".join(
        [f"{text}\n{json.dumps(metadata)}" for text, metadata in rows]
        + [json.dumps(payload) for payload in events]
    )


def ask_to_read(chat, clock, path: str) -> str:
    run_prompt(chat, f"[[mock:tool]] {READ[chat.kind](path)} please", clock)
    return transcript(chat.session)


def seen_cwd(chat) -> str:
    """The working directory as the agent itself is told it (inside its sandbox)."""
    return acp_config_for(chat.session.target, session_id=chat.session.pk).cwd


def host_dir(session) -> Path:
    path = Path(django_settings.KANDEV_ACP_WORKDIR) / f"session-{session.pk}"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def canary() -> str:
    return f"canary-{secrets.token_hex(12)}"


@pytest.fixture
def other_session(chat, canary):
    """Another person's session with a private note in its folder."""
    from django.contrib.auth import get_user_model

    stranger = get_user_model().objects.create_user(username="stranger")
    session = session_create(owner=stranger, target=chat.session.target, title="private")
    (host_dir(session) / "note.txt").write_text(f"my private prompt {canary}\n")
    return session


def test_the_system_password_file_is_not_readable(chat, clock):
    seen = ask_to_read(chat, clock, "/etc/passwd")
    assert "root:x:0:0" not in seen


def test_the_state_directory_is_not_readable_directly_or_through_the_workers_proc(
    chat, clock, canary
):
    state = Path(django_settings.BASE_DIR) / ".kandev"
    state.mkdir(exist_ok=True)
    planted = state / f"attack-{secrets.token_hex(4)}"  # the canary is in the content only
    planted.write_text(f"SECRET_KEY={canary}\n")
    try:
        seen = ask_to_read(chat, clock, str(planted))
        seen += ask_to_read(chat, clock, f"/proc/{os.getpid()}/cwd/.kandev/{planted.name}")
    finally:
        planted.unlink()
    assert canary not in seen


def test_the_workers_environment_is_not_readable(chat, clock, canary, monkeypatch):
    monkeypatch.setenv("KANDEV_ATTACK_CANARY", canary)
    seen = ask_to_read(chat, clock, f"/proc/{os.getpid()}/environ")
    seen += ask_to_read(chat, clock, "/proc/self/environ")
    assert canary not in seen
    assert django_settings.SECRET_KEY not in seen


def test_another_sessions_folder_is_not_readable_by_path_or_by_dotdot(
    chat, clock, canary, other_session
):
    note = host_dir(other_session) / "note.txt"
    seen = ask_to_read(chat, clock, str(note))
    seen += ask_to_read(chat, clock, f"{seen_cwd(chat)}/../session-{other_session.pk}/note.txt")
    assert canary not in seen


def test_a_symlink_planted_in_the_agents_own_folder_does_not_lead_out(
    chat, clock, canary, other_session
):
    own = host_dir(chat.session)
    (own / "innocent.txt").symlink_to(host_dir(other_session) / "note.txt")
    (own / "passwd").symlink_to("/etc/passwd")
    seen = ask_to_read(chat, clock, f"{seen_cwd(chat)}/innocent.txt")
    seen += ask_to_read(chat, clock, f"{seen_cwd(chat)}/passwd")
    assert canary not in seen
    assert "root:x:0:0" not in seen


def test_a_read_inside_the_working_directory_works(chat, clock, canary):
    (host_dir(chat.session) / "notes.txt").write_text(f"meeting notes {canary}\n")
    seen = ask_to_read(chat, clock, f"{seen_cwd(chat)}/notes.txt")
    assert canary in seen


def test_a_shell_call_reaches_the_app_as_a_permission_request_and_does_not_run(chat, clock):
    target = f"{seen_cwd(chat)}/pwned"
    run_prompt(chat, f"[[mock:tool]] {SHELL[chat.kind](f'touch {target}')} please", clock)

    tools = Message.objects.filter(session=chat.session, role=Message.Role.TOOL_CALL)
    decisions = [row.metadata.get("permission") for row in tools]
    assert any(decisions), f"no permission request reached the app: {decisions}"
    assert all(d is None or d["granted"] is False for d in decisions)
    assert not (host_dir(chat.session) / "pwned").exists()


# ---- now that a person can say yes: the sandbox alone must still hold ------------------------


@pytest.fixture(params=REAL_AGENTS)
def yes_chat(request, owner, mock_url) -> AgentChat:
    """A chat whose every request is granted: the worst a careless person can do."""
    return agent_chat(request.param, owner=owner, mock_url=mock_url, permission_policy="allow_all")


def test_even_when_everything_is_allowed_the_secrets_stay_out_of_reach(yes_chat, clock, canary):
    state = Path(django_settings.BASE_DIR) / ".kandev"
    state.mkdir(exist_ok=True)
    planted = state / f"attack-{secrets.token_hex(4)}"
    planted.write_text(f"SECRET_KEY={canary}\n")
    try:
        seen = ask_to_read(yes_chat, clock, str(planted))
        run_prompt(
            yes_chat,
            f"[[mock:tool]] {SHELL[yes_chat.kind](f'cat {planted} /etc/shadow > leak.txt')} go",
            clock,
        )
        seen += transcript(yes_chat.session)
    finally:
        planted.unlink()
    assert canary not in seen
    leak = host_dir(yes_chat.session) / "leak.txt"
    assert not leak.exists() or canary not in leak.read_text()
    assert "root:" not in seen


def test_under_the_default_policy_a_command_waits_for_a_person_and_never_runs_before(
    owner, mock_url, clock
):
    for kind in REAL_AGENTS:
        chat = agent_chat(kind, owner=owner, mock_url=mock_url, permission_policy="ask")
        target = f"{seen_cwd(chat)}/pwned"
        done = threading.Thread(
            target=_run_and_close,
            args=(chat, f"[[mock:tool]] {SHELL[kind](f'touch {target}')} please", clock),
            daemon=True,
        )
        done.start()
        asked = eventually(
            lambda chat=chat: Approval.objects.filter(
                session=chat.session, state=Approval.State.PENDING
            ).first(),
            timeout=120,
            what=f"{kind}'s command to wait for a person",
        )
        assert asked.kind == "execute" and "touch" in (asked.command or asked.title)
        assert not (host_dir(chat.session) / "pwned").exists()  # nothing ran before an answer
        reject = next(o["option_id"] for o in asked.options if o["kind"] == "reject_once")
        approval_decide(approval_id=asked.pk, user=owner, option_id=reject)
        done.join(120)
        assert not done.is_alive()
        assert not (host_dir(chat.session) / "pwned").exists()


def _run_and_close(chat, text, clock) -> None:
    try:
        run_prompt(chat, text, clock)
    finally:
        connection.close()
