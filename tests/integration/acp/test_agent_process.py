"""An agent process and everything it starts: exactly the environment given, and the whole tree
ended when the prompt ends, is stopped, or the worker shuts down. Real processes throughout: the
agent is our mock agent started by a shell that first leaves a `sleep` child behind, the way a
real agent's tool or helper outlives a careless parent."""

from __future__ import annotations

import dataclasses
import shlex
import sys
import threading
import time

import psutil

from devtools.eventually import eventually
from recovery.guard import CancelToken
from recovery.providers.acp import PromptCompleted, PromptFailure, acp_prompt_iter
from recovery.providers.acp.process import agent_processes_end_all, agent_processes_live

from .conftest import REPO

AGENT = shlex.join([sys.executable, "-m", "recovery.mock.acp_agent"])


def spec_with_helper(mock_agent, prompt: str, *, env_dump=None, **kwargs):
    dump = f"env > {shlex.quote(str(env_dump))}; " if env_dump else ""
    # The shell leaves a helper running, then becomes the agent: the helper is the agent's child.
    command = ("/bin/sh", "-c", f"{dump}sleep 300 & exec {AGENT}")
    return dataclasses.replace(mock_agent.spec(prompt, **kwargs), command=command)


def helpers() -> list[psutil.Process]:
    return [
        child
        for child in psutil.Process().children(recursive=True)
        if child.name() == "sleep" and child.cmdline()[1:] == ["300"]
    ]


def alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    running = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                running.append(process)
        except psutil.NoSuchProcess:
            continue
    return running


def gone(processes: list[psutil.Process], *, within_s: float = 5.0) -> bool:
    """Whether every process has ended (a SIGKILL lands within milliseconds, not at once); fails
    naming the ones still alive after ``within_s``."""
    left = eventually(
        lambda: alive(processes),
        until=lambda running: not running,
        timeout=within_s,
        what="no process left",
    )
    return not left


def collect(items, *, on_first_event=None):
    seen, outcome = [], None
    for item in items:
        if isinstance(item, (PromptCompleted, PromptFailure)):
            outcome = item
        else:
            if not seen and on_first_event is not None:
                on_first_event()
            seen.append(item)
    return seen, outcome


def test_the_agent_gets_exactly_the_environment_given(mock_agent, tmp_path):
    dump = tmp_path / "env.txt"
    _, outcome = collect(acp_prompt_iter(spec_with_helper(mock_agent, "hello", env_dump=dump)))

    assert isinstance(outcome, PromptCompleted)
    names = {line.split("=", 1)[0] for line in dump.read_text().splitlines() if "=" in line}
    # What the spec gave, plus what /bin/sh itself sets; nothing of this worker's (no HOME, USER,
    # PATH, DATABASE_URL, ...), unlike the SDK's own spawn, which copies a default set.
    given = {"PYTHONPATH", "KANDEV_MOCK_ACP_STATE", "KANDEV_MOCK_ACP_RECORD"}
    assert names - {"PWD", "SHLVL", "_", "OLDPWD"} == given
    assert str(REPO) in dump.read_text()


def test_an_answered_prompt_leaves_no_process_of_the_agent_behind(mock_agent):
    found: list[psutil.Process] = []
    _, outcome = collect(
        acp_prompt_iter(spec_with_helper(mock_agent, "/slow:50 hello")),
        on_first_event=lambda: found.extend(helpers()),
    )

    assert isinstance(outcome, PromptCompleted)
    assert found, "the helper was never seen running"
    assert gone(found)
    assert agent_processes_live() == frozenset()


def test_a_cancelled_prompt_ends_the_whole_tree(mock_agent):
    token = CancelToken()
    found: list[psutil.Process] = []

    def first_event() -> None:
        found.extend(helpers())
        token.cancel()

    _, outcome = collect(
        acp_prompt_iter(spec_with_helper(mock_agent, "/slow:500 hello"), cancel=token),
        on_first_event=first_event,
    )

    assert outcome is not None
    assert found and gone(found)


def test_a_prompt_past_its_timeout_ends_the_whole_tree(mock_agent):
    found: list[psutil.Process] = []
    _, outcome = collect(
        acp_prompt_iter(
            spec_with_helper(mock_agent, "/slow:2000 hello", prompt_timeout_s=1, cancel_grace_s=0.5)
        ),
        on_first_event=lambda: found.extend(helpers()),
    )

    assert isinstance(outcome, PromptFailure)
    assert found and gone(found)


def test_worker_shutdown_ends_every_agent_still_running(mock_agent):
    started = threading.Event()
    found: list[psutil.Process] = []
    outcomes = []

    def run() -> None:
        def first() -> None:
            found.extend(helpers())
            started.set()

        outcomes.append(
            collect(
                acp_prompt_iter(spec_with_helper(mock_agent, "/slow:2000 hello")),
                on_first_event=first,
            )[1]
        )

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert started.wait(60), "the agent never answered"
    began = time.monotonic()

    assert agent_processes_end_all() == 1
    thread.join(30)

    assert not thread.is_alive() and time.monotonic() - began < 10
    assert isinstance(outcomes[0], PromptFailure)  # the agent died: no answer
    assert gone(found)
    assert agent_processes_live() == frozenset()
