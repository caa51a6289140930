"""Each real agent CLI reads a file holding NUL bytes from inside its working directory (its own
read tool, asked for by the mock provider): the turn ends normally, the tool row completes, and
the NUL shows as U+FFFD wherever the agent relayed it (PostgreSQL refuses NUL in text and jsonb).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings

from sessions_app.agent.targets import acp_config_for
from sessions_app.models import Message, PromptGeneration, SessionEvent
from tests.agents.conftest import AgentChat, run_prompt, viewer_texts

pytestmark = [pytest.mark.agents, pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]

# .ts: Gemini CLI's read_file takes a file of that extension for text without looking for NUL
# bytes (any other name holding one is "Cannot display content of binary file").
FILE_NAME = "notes.ts"
CONTENT = b"alpha\x00beta\n"
SHOWN = "alpha\ufffdbeta"


def read_tool_call(kind: str, *, cwd: str) -> str:
    """The mock provider's `tool` marker asking this agent for its own file-reading tool. The
    path is the one the agent sees (its cwd), never the host's."""
    path = f"{cwd}/{FILE_NAME}"
    if kind == "claude":
        return f"Read {json.dumps({'file_path': path})}"
    if kind == "gemini":
        return f"read_file {json.dumps({'file_path': path})}"
    return f"shell_command {json.dumps({'command': f'cat {FILE_NAME}', 'workdir': cwd})}"


def plant_file(chat: AgentChat) -> str:
    """The file in the session's working directory on the host; the agent-side cwd returned."""
    host_dir = Path(settings.KANDEV_ACP_WORKDIR) / f"session-{chat.session.pk}"
    host_dir.mkdir(parents=True, exist_ok=True)
    (host_dir / FILE_NAME).write_bytes(CONTENT)
    return acp_config_for(chat.session.target, session_id=chat.session.pk).cwd


def test_a_file_with_nul_bytes_read_by_the_agent_ends_the_turn_with_the_nul_replaced(chat, clock):
    cwd = plant_file(chat)
    prompt = f"[[mock:tool]] {read_tool_call(chat.kind, cwd=cwd)} read my notes"

    generation = run_prompt(chat, prompt, clock)

    assert generation.state == PromptGeneration.State.SUCCEEDED, generation.error_message
    tools = Message.objects.filter(session=chat.session, role="tool_call")
    assert tools.exists(), "the agent never called its read tool"
    assert {row.status for row in tools} == {"complete"}
    # The provider got the file's content back from the agent, and the answer quoting it is on
    # the page with the NUL replaced.
    answer = viewer_texts(chat, "assistant")[-1]
    assert answer.startswith("The tool returned:")
    assert SHOWN in answer
    stored = json.dumps(
        [
            list(Message.objects.filter(session=chat.session).values_list("text", "metadata")),
            list(SessionEvent.objects.filter(session=chat.session).values_list("payload")),
        ]
    )
    assert "\\u0000" not in stored
