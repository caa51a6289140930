"""An ACP agent's output holding characters PostgreSQL refuses (a file with NUL bytes and bytes
that are not UTF-8, read by the agent; an agent's stderr with a NUL) is stored with each one
replaced by U+FFFD, and the turn ends as it would have: the real mock ACP agent as a subprocess,
the real worker code, real Postgres."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from sessions_app.models import Message, PromptGeneration, SessionEvent
from sessions_app.selectors import session_snapshot
from tests.integration.acp_app.conftest import run_prompt

pytestmark = pytest.mark.django_db(transaction=True)

FFFD = "\ufffd"


def plant(chat, name: str, content: bytes) -> None:
    """A file in the session's working directory on the host (the agent sees it in its cwd)."""
    workdir = Path(settings.KANDEV_ACP_WORKDIR) / f"session-{chat.pk}"
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / name).write_bytes(content)


def test_a_file_with_nul_bytes_read_by_the_agent_ends_the_turn_normally(chat, owner, clock):
    plant(chat, "dump.bin", b"head\x00tail \xff end")

    generation = run_prompt(chat, owner, "[[mock:read-file]] dump.bin", clock)

    assert generation.state == PromptGeneration.State.SUCCEEDED, generation.error_message
    shown = f"head{FFFD}tail {FFFD} end"
    tool = Message.objects.get(session=chat, role="tool_call")
    assert (tool.status, tool.metadata["status"]) == ("complete", "completed")
    assert tool.text == f"Read dump.bin\n{shown}"
    assert tool.metadata["output"] == shown
    assert Message.objects.get(session=chat, role="thinking").text == f"The file holds: {shown}"
    assert Message.objects.get(session=chat, role="assistant").text == f"The file says: {shown}"
    assert session_snapshot(session=chat)["messages"][-1]["text"] == f"The file says: {shown}"


def test_a_nul_in_the_agents_stderr_reaches_the_card_as_a_replacement_character(chat, owner, clock):
    generation = run_prompt(chat, owner, "/crash:nul now", clock)

    assert generation.state == PromptGeneration.State.FAILED
    assert f"simulated {FFFD} crash" in generation.error_message
    updates = SessionEvent.objects.filter(session=chat, type="session.updated").order_by("seq")
    assert f"simulated {FFFD} crash" in updates.last().payload["explanation"]
