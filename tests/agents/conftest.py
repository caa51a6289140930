"""The real agent CLIs (Claude Code, Codex, Gemini CLI, installed by `make install` from
package-lock.json) run by the real worker code against the mock provider on loopback, with real
Postgres and Redis. Each test talks to its own mock conversation (a /conversations/{id} prefix in
the target's base URL), so requests are counted per turn at the mock. Scheduled retries run by
calling the task's service directly when the injected wall clock reaches their eta: nothing waits
through the production backoff."""

from __future__ import annotations

import json
import random
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
import redis
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model

from recovery.budget import RetrySettings
from recovery.circuit import HealthSettings
from recovery.mock.testing import SplitClock, running_mock_server
from sessions_app.agent.registry import AGENTS
from sessions_app.agent.runner import generation_retry, generation_run
from sessions_app.agent.targets import acp_config_for
from sessions_app.ladder.models import RetryLoop
from sessions_app.models import (
    Message,
    PermissionPolicyChoice,
    PromptGeneration,
    ProviderTarget,
    SessionEvent,
)
from sessions_app.services import prompt_submit, session_create

REAL_AGENTS = ("claude", "codex", "gemini")
MAX_RETRIES = 5
# What each agent's own base-URL variable expects after the provider's address.
URL_SUFFIX = {"claude": "", "codex": "/v1", "gemini": ""}


@pytest.fixture(scope="session")
def mock_url():
    with running_mock_server() as url:
        yield url


@pytest.fixture(autouse=True)
def agent_dirs(tmp_path, settings):
    settings.KANDEV_ACP_WORKDIR = tmp_path / "work"
    # Short, exact ladder: five retries one second apart (on the injected wall clock).
    settings.KANDEV_RETRY = RetrySettings(
        delays_s=(1.0,), max_attempts=MAX_RETRIES, jitter=0.0, deadline_s=600.0
    )
    # Each test is about one session's own ladder, and six 529s a second apart would open the
    # target's shared circuit (tests/integration/ladder/test_shared_health.py covers that),
    # which holds the last retry and moves its banner once more.
    settings.KANDEV_HEALTH = HealthSettings(enabled=False)
    return tmp_path


@pytest.fixture(autouse=True)
def quiet_queue():
    client = redis.Redis.from_url(django_settings.REDIS["client"])
    client.delete(django_settings.CELERY_TASK_DEFAULT_QUEUE)
    yield
    client.delete(django_settings.CELERY_TASK_DEFAULT_QUEUE)
    client.close()


@pytest.fixture
def clock():
    return SplitClock()


@pytest.fixture
def owner(db):
    return get_user_model().objects.create_user(username="owner")


@dataclass
class AgentChat:
    kind: str
    conversation: str
    mock_url: str
    session: object
    owner: object

    def requests(self) -> list[dict]:
        url = f"{self.mock_url}/_mock/requests?conversation={self.conversation}"
        with urllib.request.urlopen(url, timeout=10) as answer:
            return json.load(answer)["requests"]

    def script(self, scenario: str) -> None:
        body = json.dumps({"scenario": scenario, "conversation": self.conversation}).encode()
        request = urllib.request.Request(
            f"{self.mock_url}/_mock/script",
            data=body,
            headers={"Content-Type": "application/json"},
        )
        urllib.request.urlopen(request, timeout=10).close()


def agent_chat(
    kind: str,
    *,
    owner,
    mock_url: str,
    permission_policy: str = PermissionPolicyChoice.ALLOW_READ_ONLY,
) -> AgentChat:
    """A chat with the real ``kind`` agent. Its requests are answered read-only unless the test
    names another policy: under ask, a turn waits for a person the test must play."""
    conversation = f"{kind}-{uuid.uuid4().hex[:12]}"
    target = ProviderTarget.objects.create(
        name=f"{AGENTS[kind].label} {conversation}",
        kind=ProviderTarget.Kind.ACP,
        agent_kind=kind,
        base_url=f"{mock_url}/conversations/{conversation}{URL_SUFFIX[kind]}",
        model=AGENTS[kind].default_model,
        permission_policy=permission_policy,
    )
    config = acp_config_for(target, session_id=0)
    # The agent's own command line follows its sandbox's, after the last "--".
    # (Unconfined, KANDEV_AGENT_SANDBOX=off, as when checking a test against the old code, the
    # whole command line is the agent's.)
    wrapped = "--" in config.command
    own = (
        config.command[len(config.command) - config.command[::-1].index("--") :]
        if wrapped
        else config.command
    )
    missing = [part for part in own if "/" in part and not Path(part).exists()]
    assert not missing, f"{kind} is not installed ({missing}): run `make install`"
    session = session_create(owner=owner, target=target, title=f"{kind} chat")
    return AgentChat(kind, conversation, mock_url, session, owner)


@pytest.fixture(params=REAL_AGENTS)
def chat(request, owner, mock_url) -> AgentChat:
    return agent_chat(request.param, owner=owner, mock_url=mock_url)


def run_prompt(chat: AgentChat, text: str, clock, **kwargs) -> PromptGeneration:
    generation = prompt_submit(session=chat.session, user=chat.owner, text=text)
    generation_run(generation_id=generation.pk, clock=clock, rng=random.Random(7), **kwargs)
    generation.refresh_from_db()
    return generation


def run_retry(generation: PromptGeneration, clock) -> PromptGeneration:
    loop = RetryLoop.objects.get(generation=generation)
    clock.wall.set(loop.next_attempt_at.timestamp())  # the eta arrived
    generation_retry(loop_id=loop.pk, attempt=loop.attempt, clock=clock, rng=random.Random(7))
    generation.refresh_from_db()
    return generation


def events(chat: AgentChat, prefix: str = "") -> list[tuple[str, dict]]:
    return list(
        SessionEvent.objects.filter(session=chat.session, type__startswith=prefix)
        .order_by("seq")
        .values_list("type", "payload")
    )


def viewer_texts(chat: AgentChat, role: str) -> list[str]:
    """Each message of ``role`` as a viewer's page built it from the pushed events."""
    texts: dict[int, str] = {}
    for kind, payload in events(chat, "message."):
        if kind in ("message.created", "message.updated") and payload["message"]["role"] == role:
            texts[payload["message"]["id"]] = payload["message"]["text"]
        elif kind == "message.appended" and payload["id"] in texts:
            texts[payload["id"]] += payload["text"]
        elif kind == "message.deleted":
            for gone in payload["ids"]:
                texts.pop(gone, None)
    return [texts[key] for key in sorted(texts)]


def assistant_rows(chat: AgentChat) -> list[tuple[str, bool]]:
    rows = Message.objects.filter(session=chat.session, role=Message.Role.ASSISTANT)
    return list(rows.order_by("id").values_list("text", "incomplete"))


def agent_tree() -> list[psutil.Process]:
    """This process's agent processes (anything run from node_modules) and their descendants."""
    packages = str(django_settings.KANDEV_AGENT_PACKAGES)
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if any(packages in part for part in child.cmdline()):
                found.append(child)
        except psutil.Error:
            continue
    tree = {p.pid: p for p in found}
    for process in found:
        try:
            tree.update({c.pid: c for c in process.children(recursive=True)})
        except psutil.Error:
            continue
    return list(tree.values())


def still_running(processes: list[psutil.Process], *, within_s: float = 10.0) -> list[int]:
    """The pids of ``processes`` still alive ``within_s`` seconds from now (an ended tree may
    take a moment to be reaped on a loaded machine; one still there after that is an orphan)."""
    _, alive = psutil.wait_procs(processes, timeout=within_s)
    pids = []
    for process in alive:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                pids.append(process.pid)
        except psutil.NoSuchProcess:
            continue
    return pids
