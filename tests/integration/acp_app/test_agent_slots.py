"""ACP agents are limited per box apart from the worker's threads: a turn that finds every slot
taken (or the box short of memory) stays queued, saying why, and runs once a slot is free."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from django.conf import settings

from sessions_app.agent.slots import (
    agent_slot_holders,
    agent_slot_take,
    agent_slots_taken,
    memory_available_mb,
)
from sessions_app.models import PromptGeneration, SessionEvent
from tests.integration.acp_app.conftest import run_prompt

pytestmark = pytest.mark.django_db


@pytest.fixture
def slots(settings, tmp_path):
    settings.KANDEV_ACP_SLOT_DIR = tmp_path / "slots"
    settings.KANDEV_ACP_MAX_AGENTS = 1
    settings.KANDEV_ACP_MIN_FREE_MB = 0
    return settings.KANDEV_ACP_SLOT_DIR


def queued_run_tasks(redis_client, queue: str) -> list[dict]:
    return [json.loads(raw) for raw in redis_client.lrange(queue, 0, -1)]


def test_a_turn_with_no_free_slot_waits_queued_and_says_why(
    chat, owner, clock, slots, redis_client, celery_queue
):
    held = agent_slot_take(directory=slots, count=1, min_free_mb=0)
    try:
        generation = run_prompt(chat, owner, "hello", clock)
    finally:
        held.release()

    assert (generation.state, generation.queue_reason) == ("queued", "agent_slot")
    update = SessionEvent.objects.filter(session=chat, type="session.updated").last().payload
    assert update["state"] == "queued" and update["queue"]["reason"] == "agent_slot"
    # Its task comes back later, with a countdown, instead of holding a worker thread.
    tasks = [t for t in queued_run_tasks(redis_client, celery_queue)
             if t["headers"]["task"] == "sessions_app.run_generation"]  # fmt: skip
    assert tasks and tasks[-1]["headers"]["eta"] is not None


def test_the_turn_runs_once_a_slot_is_free_and_gives_it_back(chat, owner, clock, slots):
    generation = run_prompt(chat, owner, "hello", clock)

    assert generation.state == PromptGeneration.State.SUCCEEDED
    assert agent_slots_taken(directory=slots, count=1) == 0


def test_a_box_short_of_memory_gives_no_slot(slots, tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 8000000 kB\nMemAvailable:  204800 kB\n")

    assert memory_available_mb(meminfo=meminfo) == 200
    assert agent_slot_take(directory=slots, count=4, min_free_mb=512, meminfo=meminfo) is None
    slot = agent_slot_take(directory=slots, count=4, min_free_mb=100, meminfo=meminfo)
    assert slot is not None
    slot.release()


def test_an_unreadable_meminfo_does_not_block_agents(slots, tmp_path):
    missing = tmp_path / "nothing-here"
    garbled = tmp_path / "garbled"
    garbled.write_text("MemAvailable: lots\n")

    assert memory_available_mb(meminfo=missing) is None
    assert memory_available_mb(meminfo=garbled) is None
    slot = agent_slot_take(directory=slots, count=1, min_free_mb=512, meminfo=garbled)
    assert slot is not None
    slot.release()


HOLD_AND_DIE = """
import sys
from pathlib import Path
from sessions_app.agent.slots import agent_slot_take
slot = agent_slot_take(directory=Path(sys.argv[1]), count=1, min_free_mb=0)
print("took" if slot else "none")
# Exits without releasing: the kernel lets go of the lock with the process.
"""


def other_process_takes(slots) -> str:
    return subprocess.run(
        [sys.executable, "-c", HOLD_AND_DIE, str(slots)],
        cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=60, check=True,
    ).stdout.strip()  # fmt: skip


def test_slots_are_shared_by_the_processes_of_a_box_and_freed_when_one_dies(slots):
    held = agent_slot_take(directory=slots, count=1, min_free_mb=0)
    assert other_process_takes(slots) == "none"

    held.release()
    assert other_process_takes(slots) == "took"  # and died holding it

    again = agent_slot_take(directory=slots, count=1, min_free_mb=0)
    assert again is not None
    again.release()


HOLD_UNTIL_KILLED = """
import signal, sys
from pathlib import Path
from sessions_app.agent.slots import agent_slot_take
slot = agent_slot_take(directory=Path(sys.argv[1]), count=2, min_free_mb=0, holder="7")
print("took" if slot else "none", flush=True)
signal.pause()  # holds the slot until the test kills it
"""


def test_who_holds_a_slot_is_known_to_every_process_and_forgotten_when_the_holder_is_killed(slots):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_UNTIL_KILLED, str(slots)],
        cwd=settings.BASE_DIR, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "took"
        mine = agent_slot_take(directory=slots, count=2, min_free_mb=0, holder="8")
        assert sorted(agent_slot_holders(directory=slots, count=2)) == ["7", "8"]
    finally:
        holder.kill()  # SIGKILL: no clean-up runs in the holder
        holder.wait(30)

    assert agent_slot_holders(directory=slots, count=2) == ["8"]
    mine.release()
    assert agent_slot_holders(directory=slots, count=2) == []
