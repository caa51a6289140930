"""The box's agent slots are shared fairly between people: with two slots, one person's slow agent
prompts cannot take the second slot while another person waits for one, and the slot one of their
turns gives back goes to the person waiting. Real mock agents in real worker code on threads, the
slots held with flock as in production; every turn is stopped at the end."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from django.db import connection

from devtools.eventually import eventually
from sessions_app.agent.runner import generation_run
from sessions_app.agent.slots import agent_slot_holders
from sessions_app.models import PromptGeneration
from sessions_app.services import generation_stop_request, prompt_submit
from tests.support.factories import SessionFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

# One word every 30 s: it holds its slot for the whole test, and stops at once when asked.
SLOW = "/slow:30000 take your time"
# A refused turn returns at once; one that (wrongly) got a slot keeps running for 30 s and more.
REFUSAL_WITHIN_S = 15.0


@pytest.fixture
def two_slots(settings, tmp_path):
    settings.KANDEV_ACP_SLOT_DIR = tmp_path / "slots"
    settings.KANDEV_ACP_MAX_AGENTS = 2
    settings.KANDEV_ACP_MIN_FREE_MB = 0
    settings.KANDEV_USER_MAX_RUNNING = 3
    settings.KANDEV_ACP_FAIR_SHARE = True
    return settings.KANDEV_ACP_SLOT_DIR


@pytest.fixture
def worker(clock) -> Iterator:
    """worker(generation) runs it on a thread as a worker would; every turn is stopped after."""
    threads: list[tuple[threading.Thread, PromptGeneration]] = []

    def start(generation: PromptGeneration) -> threading.Thread:
        def work() -> None:
            try:
                generation_run(generation_id=generation.pk, clock=clock)
            finally:
                connection.close()

        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        threads.append((thread, generation))
        return thread

    yield start
    for _, generation in threads:
        generation_stop_request(generation_id=generation.pk)
    for thread, _ in threads:
        thread.join(60)


def state_of(generation: PromptGeneration) -> tuple[str, str]:
    generation.refresh_from_db()
    return generation.state, generation.queue_reason


def running(generation: PromptGeneration) -> bool:
    return state_of(generation)[0] == PromptGeneration.State.RUNNING


def prompts(user, target, count: int) -> list[PromptGeneration]:
    sessions = [SessionFactory(owner=user, target=target) for _ in range(count)]
    return [prompt_submit(session=s, user=user, text=SLOW) for s in sessions]


def test_a_person_cannot_take_the_second_slot_while_another_person_waits(
    acp_target, two_slots, worker
):
    a, b = UserFactory(), UserFactory()
    first, second, _third = prompts(a, acp_target, 3)
    worker(first)
    eventually(lambda: running(first), timeout=60, what="A's first prompt running")
    (theirs,) = prompts(b, acp_target, 1)

    attempt = worker(second)
    attempt.join(REFUSAL_WITHIN_S)

    # A free slot, but B waits holding none: A is at their share (1 of 2) and waits too.
    assert not attempt.is_alive(), "A's second prompt took the slot B is owed"
    assert state_of(second) == ("queued", "agent_slot")
    worker(theirs)
    eventually(lambda: running(theirs), timeout=60, what="B's prompt running")
    holders = agent_slot_holders(directory=two_slots, count=2)
    assert sorted(holders) == sorted([str(a.pk), str(b.pk)])


def test_the_slot_a_persons_turn_gives_back_goes_to_the_person_waiting(
    acp_target, two_slots, worker
):
    a, b = UserFactory(), UserFactory()
    first, second, third = prompts(a, acp_target, 3)
    for generation in (first, second):  # alone on the box, A may take both slots
        worker(generation)
    eventually(lambda: running(first) and running(second), timeout=60, what="A's two prompts")
    (theirs,) = prompts(b, acp_target, 1)

    generation_stop_request(generation_id=first.pk)
    eventually(
        lambda: len(agent_slot_holders(directory=two_slots, count=2)) == 1,
        timeout=60,
        what="A's first slot given back",
    )
    attempt = worker(third)
    attempt.join(REFUSAL_WITHIN_S)

    assert not attempt.is_alive(), "A's third prompt took the slot B waits for"
    assert state_of(third) == ("queued", "agent_slot")
    worker(theirs)
    eventually(lambda: running(theirs), timeout=60, what="B's prompt running")


def test_a_person_alone_on_the_box_may_use_every_slot(acp_target, two_slots, worker):
    a = UserFactory()
    first, second = prompts(a, acp_target, 2)

    for generation in (first, second):
        worker(generation)

    eventually(lambda: running(first) and running(second), timeout=60, what="both prompts")
    assert agent_slot_holders(directory=two_slots, count=2) == [str(a.pk)] * 2
