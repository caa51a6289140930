"""An ACP session against the real mock ACP agent, run as a subprocess by the real worker code,
with real Postgres and Redis. Scheduled retries are run by calling the task's service directly,
exactly as the worker would when the eta arrives; nothing waits."""

from __future__ import annotations

import json
import random

import pytest

from recovery.mock.testing import SplitClock
from sessions_app.agent.runner import generation_retry, generation_run
from sessions_app.ladder.models import RetryLoop
from sessions_app.models import Message, PromptGeneration, ProviderTarget, SessionEvent
from sessions_app.services import prompt_submit
from tests.support.factories import ProviderTargetFactory, SessionFactory


@pytest.fixture(autouse=True)
def agent_state(tmp_path, settings):
    """The mock agent's prompt counters and working directories, private to this test."""
    settings.KANDEV_ACP_INHERITED_ENV = {
        **settings.KANDEV_ACP_INHERITED_ENV,
        "KANDEV_MOCK_ACP_STATE": str(tmp_path / "acp-state.json"),
        "KANDEV_MOCK_ACP_RECORD": str(tmp_path / "prompts.jsonl"),
    }
    settings.KANDEV_ACP_WORKDIR = tmp_path / "work"
    return tmp_path


@pytest.fixture(autouse=True)
def _quiet_queue(celery_queue):
    """Submitted prompts and scheduled attempts land in the real broker queue; keep it empty."""


@pytest.fixture
def clock():
    return SplitClock()


@pytest.fixture
def acp_target(db):
    return ProviderTargetFactory(
        name="Mock agent",
        kind=ProviderTarget.Kind.ACP,
        model="",
        agent_kind=ProviderTarget.AgentKind.MOCK,
    )


@pytest.fixture
def chat(owner, acp_target):
    """Here a chat is with the mock ACP agent (the shared one is with the mock provider)."""
    return SessionFactory(owner=owner, target=acp_target, title="Agent chat")


def run_prompt(chat, owner, text, clock, **kwargs) -> PromptGeneration:
    generation = prompt_submit(session=chat, user=owner, text=text)
    generation_run(generation_id=generation.pk, clock=clock, rng=random.Random(7), **kwargs)
    generation.refresh_from_db()
    return generation


def run_retry(generation, clock) -> PromptGeneration:
    loop = RetryLoop.objects.get(generation=generation)
    if loop.next_attempt_at is not None:
        clock.wall.set(loop.next_attempt_at.timestamp())  # the eta arrived
    generation_retry(loop_id=loop.pk, attempt=loop.attempt, clock=clock, rng=random.Random(7))
    generation.refresh_from_db()
    return generation


def rows(chat) -> list[tuple[str, str]]:
    return list(Message.objects.filter(session=chat).order_by("id").values_list("role", "text"))


def event_kinds(chat, prefix: str = "") -> list[str]:
    return list(
        SessionEvent.objects.filter(session=chat, type__startswith=prefix)
        .order_by("seq")
        .values_list("type", flat=True)
    )


def prompts_received(agent_state) -> list[str]:
    """The prompts the mock agent was sent (final blocks only), as the agent recorded them."""
    path = agent_state / "prompts.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
