"""What Claude Code, Codex and Gemini CLI send when they ask permission, and that our answer is
the one that counts: the mock provider asks each real agent, in its own tool's shape, to write a
file (`[[mock:edit:...]]`) or run a command (`[[mock:run:...]]`); the agent's request reaches an
asker under the ASK policy, which answers the agent's own allow-once or reject option. Allowed,
the file or the command's effect is in the working directory; rejected, nothing is.

With KANDEV_ACP_PERMISSION_FIXTURES=write each allowed request is also written, sanitised, to
tests/fixtures/acp_permissions/<agent>-<edit|edit-existing|run>.json (docs/agents-permissions.md),
which tests/unit/acp/test_permission_fixtures.py feeds through asking.ask_from."""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path

import pytest

from recovery.providers.acp import AcpPromptSpec, AgentText, Correlation, acp_prompt_iter
from recovery.providers.acp import answering as acp_answering
from recovery.providers.acp.asking import PermissionAsk
from recovery.providers.acp.failure import PromptCompleted, PromptFailure
from recovery.providers.acp.permissions import PermissionPolicy
from recovery.taxonomy import Exposure
from sessions_app.agent.targets import acp_config_for
from tests.agents.conftest import AgentChat, agent_chat

pytestmark = [pytest.mark.agents, pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "acp_permissions"
WRITE_FIXTURES = os.environ.get("KANDEV_ACP_PERMISSION_FIXTURES") == "write"
TEXT = "written by the agent: yes"
FILE = "agent-wrote.txt"
MADE = "made-by-agent"
ALLOW, REJECT = "allow_once", "reject_once"


class Recorder:
    """The asker a person would be: records what it was shown and answers one option kind. It
    also keeps the agent's own request as the run received it (before ask_from shaped it)."""

    def __init__(self, answer_kind: str) -> None:
        self.answer_kind = answer_kind
        self.asks: list[PermissionAsk] = []
        self.requests: list[dict] = []

    async def __call__(self, ask: PermissionAsk) -> str | None:
        self.asks.append(ask)
        await asyncio.sleep(0)
        return next((o.option_id for o in ask.options if o.kind == self.answer_kind), None)


@pytest.fixture
def recorded_requests(monkeypatch):
    """The real ask_from, with each request it is given kept as the agent sent it."""
    kept: list[dict] = []
    real = acp_answering.ask_from

    def keeping(*, tool_call, options, kind, paths, **rest):
        kept.append(
            {
                "toolCall": tool_call.model_dump(by_alias=True, mode="json", exclude_none=True),
                "options": [
                    o.model_dump(by_alias=True, mode="json", exclude_none=True) for o in options
                ],
                "kind": kind,
                "paths": list(paths),
            }
        )
        return real(tool_call=tool_call, options=options, kind=kind, paths=paths, **rest)

    monkeypatch.setattr(acp_answering, "ask_from", keeping)
    return kept


def ask_run(
    chat: AgentChat, prompt: str, asker: Recorder, *, existing: str | None = None
) -> tuple[str, Path, str]:
    """What the agent showed, and its working directory on this machine and as it sees it.
    ``existing``: FILE is there with that text before the agent starts."""
    outcome, shown, host, seen = ask_outcome(chat, prompt, asker, existing=existing)
    assert isinstance(outcome, PromptCompleted), outcome
    return shown, host, seen


def ask_outcome(chat: AgentChat, prompt: str, asker: Recorder, *, existing: str | None = None):
    config = acp_config_for(chat.session.target, session_id=chat.session.pk)
    host = Path(config.host_cwd or config.cwd)
    if existing is not None:
        (host / FILE).write_text(existing)
    spec = AcpPromptSpec(
        **{**config.launch_fields(), "permission_policy": PermissionPolicy.ASK},
        prompt=prompt,
        correlation=Correlation(session_id="s", execution_id="e", generation=1),
        prompt_timeout_s=240,
    )
    shown, outcome = "", None
    for item in acp_prompt_iter(spec, asker=asker):
        if isinstance(item, AgentText):
            shown += item.text
        elif isinstance(item, PromptCompleted | PromptFailure):
            outcome = item
    return outcome, shown, host, config.cwd


def _unclocked(value):
    if isinstance(value, dict):
        return {
            key: "<turn>" if key == "turn_id" else _unclocked(item) for key, item in value.items()
        }
    if isinstance(value, list):
        return [_unclocked(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool) and value > 10**12:
        return 0  # an epoch in milliseconds
    if isinstance(value, str):
        return re.sub(r"(?<![0-9])1[0-9]{12}(?![0-9])", "<epoch-ms>", value)
    return value


def sanitised(value, *, host: Path, seen: str):
    """The request with this run's places and clock taken out, so a re-recording differs only
    where the agent's behaviour did."""
    text = json.dumps(value).replace(str(host), "<workdir>").replace(seen, "<workdir>")
    return _unclocked(json.loads(text))


def fixture_write(chat: AgentChat, action: str, kept: dict, *, host: Path, seen: str) -> None:
    if not WRITE_FIXTURES:
        return
    request = sanitised(kept, host=host, seen=seen)
    call = request["toolCall"]
    content = call.get("content") or []
    summary = {
        "kind": call.get("kind"),
        "title": call.get("title"),
        "raw_input_keys": sorted(call.get("rawInput") or {}),
        "locations": [loc.get("path") for loc in call.get("locations") or []],
        "content_types": [item.get("type") for item in content],
        "diff": any(item.get("type") == "diff" for item in content),
        "options": [[o["optionId"], o["kind"], o["name"]] for o in request["options"]],
    }
    FIXTURES.mkdir(parents=True, exist_ok=True)
    record = {"agent": chat.kind, "action": action, "summary": summary, "request": request}
    path = FIXTURES / f"{chat.kind}-{action}.json"
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def prompt_edit() -> str:
    return f"[[mock:edit:{FILE}:{TEXT.replace(' ', '+').replace(':', '%3A')}]] please"


def test_an_allowed_edit_writes_the_file(chat, recorded_requests):
    asker = Recorder(ALLOW)
    shown, host, seen = ask_run(chat, prompt_edit(), asker)

    assert asker.asks, f"{chat.kind} wrote without asking (or never tried): {shown!r}"
    assert (host / FILE).read_text().rstrip("\n") == TEXT
    assert "The edit went through" in shown
    fixture_write(chat, "edit", recorded_requests[0], host=host, seen=seen)


def test_an_allowed_edit_replaces_a_file_that_is_there(chat, recorded_requests):
    asker = Recorder(ALLOW)
    shown, host, seen = ask_run(chat, prompt_edit(), asker, existing="the old line\n")

    assert len(asker.asks) == 1, f"{chat.kind}: {shown!r}"
    (ask,) = asker.asks
    assert ask.diff is not None and ask.diff.old_text == "the old line\n"  # what it replaces
    assert (host / FILE).read_text().rstrip("\n") == TEXT
    assert "The edit went through" in shown
    fixture_write(chat, "edit-existing", recorded_requests[-1], host=host, seen=seen)


def test_an_approved_edit_then_an_overloaded_provider_fails_with_the_file_changed(chat):
    # The turn's failure comes after an effect: the evidence says a tool ran, and the file the
    # person approved is there (what Start fresh must put back).
    prompt = "[[mock:edit-then-overloaded:agent-wrote.txt:x]] please"
    outcome, _, host, _ = ask_outcome(chat, prompt, Recorder(ALLOW))

    assert isinstance(outcome, PromptFailure), outcome
    assert outcome.evidence.exposure == Exposure.TOOL_CALL
    assert outcome.replay_facts.tool_activity
    assert (host / FILE).read_text().rstrip("\n") == "x"
    assert [r["status"] for r in chat.requests()][-1] in (503, 529)


def refusal_seen(chat: AgentChat, shown: str, what: str) -> None:
    """Claude Code and Gemini CLI send the refusal back as the tool's result and the model
    answers; Codex's reject option is "abort": it ends the turn and sends nothing back (the
    last request carries the result of its `cat` before an edit, none before a command)."""
    if chat.kind == "codex":
        assert chat.requests()[-1]["tool_results"] == (1 if what == "edit" else 0)
        assert "refused" not in shown
    else:
        assert chat.requests()[-1]["tool_results"] >= 1  # the refusal came back
        assert f"The {what} was refused" in shown


def test_a_rejected_edit_leaves_no_file(chat, recorded_requests):
    asker = Recorder(REJECT)
    shown, host, _ = ask_run(chat, prompt_edit(), asker)

    assert asker.asks, f"{chat.kind} did not ask: {shown!r}"
    assert not (host / FILE).exists()
    refusal_seen(chat, shown, "edit")


def test_an_allowed_command_runs(chat, recorded_requests):
    asker = Recorder(ALLOW)
    shown, host, seen = ask_run(chat, f"[[mock:run:touch+{MADE}]] please", asker)

    assert asker.asks, f"{chat.kind} ran without asking (or never tried): {shown!r}"
    assert (host / MADE).exists()
    assert "The command went through" in shown
    fixture_write(chat, "run", recorded_requests[0], host=host, seen=seen)


def test_a_rejected_command_has_no_effect(chat, recorded_requests):
    asker = Recorder(REJECT)
    shown, host, _ = ask_run(chat, f"[[mock:run:touch+{MADE}]] please", asker)

    assert asker.asks, f"{chat.kind} did not ask: {shown!r}"
    assert not (host / MADE).exists()
    refusal_seen(chat, shown, "command")


def test_codex_cannot_add_a_file_in_a_folder_that_is_not_there_yet(owner, mock_url):
    # Pinned finding: approved, Codex's apply_patch may write the files its patch names but not
    # create a missing parent folder in its own read-only sandbox; the model is told it failed.
    chat = agent_chat("codex", owner=owner, mock_url=mock_url)
    shown, host, _ = ask_run(chat, "[[mock:edit:notes/new.txt:hello]] please", Recorder(ALLOW))

    assert not (host / "notes").exists()
    assert "The edit failed" in shown and "Failed to create parent directories" in shown
