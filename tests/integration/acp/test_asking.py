"""The ASK policy against the real mock ACP agent: what a person is asked, what their answer does
to the agent's edit, Stop while they think, and the prompt timeout paused while they do."""

from __future__ import annotations

import asyncio

from recovery.cancel import CancelToken
from recovery.clock import FakeClock
from recovery.providers.acp import (
    AcpPromptRun,
    AgentPermission,
    PermissionPolicy,
    PromptCompleted,
    PromptFailure,
)
from recovery.providers.acp.asking import AskDiff, AskOption, PermissionAsk
from recovery.providers.acp.deadline import PausableDeadline
from recovery.taxonomy import Kind


class Person:
    """An asker that records what it was asked and answers with ``choose``."""

    def __init__(self, choose=lambda ask: "allow", *, clock=None, think_s=0.0) -> None:
        self.asked: list[PermissionAsk] = []
        self.choose = choose
        self.clock = clock
        self.think_s = think_s
        self.waiting = asyncio.Event()

    async def __call__(self, ask: PermissionAsk) -> str | None:
        self.asked.append(ask)
        self.waiting.set()
        if self.clock is not None:
            self.clock.advance(self.think_s)  # the person takes their time (injected)
        answer = self.choose(ask)
        if answer is _FOREVER:
            await asyncio.Event().wait()
        return answer


_FOREVER = object()


async def run(spec, person, **kwargs):
    events = []
    outcome = await AcpPromptRun(
        spec=spec, on_event=events.append, asker=person, **kwargs
    ).execute()
    return events, outcome


def permissions(events):
    return [e for e in events if isinstance(e, AgentPermission)]


async def test_it_asks_for_an_edit_with_its_diff_and_the_agents_own_options(mock_agent):
    (mock_agent.cwd / "notes.md").write_text("old line\n")
    person = Person()

    events, outcome = await run(
        mock_agent.spec("/edit notes.md new line", policy=PermissionPolicy.ASK), person
    )

    assert isinstance(outcome, PromptCompleted)
    [ask] = person.asked
    path = str(mock_agent.cwd / "notes.md")
    assert (ask.kind, ask.title, ask.paths) == ("edit", "Edit notes.md", (path,))
    assert ask.diff == AskDiff(path=path, old_text="old line\n", new_text="new line\n")
    assert ask.options == (
        AskOption(option_id="allow", name="Allow once", kind="allow_once"),
        AskOption(option_id="allow-always", name="Allow always", kind="allow_always"),
        AskOption(option_id="reject", name="Reject", kind="reject_once"),
    )
    assert (mock_agent.cwd / "notes.md").read_text() == "new line\n"
    [permission] = permissions(events)
    assert (permission.granted, permission.option_kind, permission.tool_kind) == (
        True,
        "allow_once",
        "edit",
    )
    assert permission.asked


async def test_a_rejected_edit_leaves_the_file_untouched(mock_agent):
    (mock_agent.cwd / "notes.md").write_text("old line\n")

    events, _ = await run(
        mock_agent.spec("/edit notes.md new line", policy=PermissionPolicy.ASK),
        Person(lambda ask: "reject"),
    )

    assert (mock_agent.cwd / "notes.md").read_text() == "old line\n"
    assert [(p.granted, p.option_kind) for p in permissions(events)] == [(False, "reject_once")]


async def test_an_answer_the_agent_did_not_offer_is_answered_cancelled(mock_agent):
    (mock_agent.cwd / "notes.md").write_text("old line\n")

    events, _ = await run(
        mock_agent.spec("/edit notes.md new line", policy=PermissionPolicy.ASK),
        Person(lambda ask: "rm-rf"),
    )

    assert (mock_agent.cwd / "notes.md").read_text() == "old line\n"
    assert [(p.granted, p.option_kind) for p in permissions(events)] == [(False, None)]


async def test_an_asker_that_breaks_answers_cancelled_and_the_tool_never_runs(mock_agent):
    def broken(ask):
        raise ConnectionError("the database went away")

    events, outcome = await run(
        mock_agent.spec("/edit notes.md new line", policy=PermissionPolicy.ASK), Person(broken)
    )

    assert not (mock_agent.cwd / "notes.md").exists()
    assert [(p.granted, p.option_kind) for p in permissions(events)] == [(False, None)]
    assert isinstance(outcome, PromptCompleted) and outcome.stop_reason == "cancelled"


async def test_a_command_is_asked_with_the_command_as_what_will_run(mock_agent):
    person = Person(lambda ask: "reject")

    await run(mock_agent.spec("/exec make deploy", policy=PermissionPolicy.ASK), person)

    [ask] = person.asked
    assert (ask.kind, ask.command, ask.diff) == ("execute", "make deploy", None)


async def test_a_contained_read_passes_without_asking_under_ask(mock_agent):
    person = Person()

    events, _ = await run(mock_agent.spec("/tool:read", policy=PermissionPolicy.ASK), person)

    assert person.asked == []
    assert [(p.granted, p.asked) for p in permissions(events)] == [(True, False)]


async def test_the_read_only_policy_never_asks(mock_agent):
    person = Person()

    await run(mock_agent.spec("/edit notes.md x", policy=PermissionPolicy.ALLOW_READ_ONLY), person)

    assert person.asked == []
    assert not (mock_agent.cwd / "notes.md").exists()


async def test_stop_while_a_person_thinks_answers_cancelled_and_ends_the_turn(mock_agent):
    (mock_agent.cwd / "notes.md").write_text("old line\n")
    person = Person(lambda ask: _FOREVER)
    cancel = CancelToken()

    async def stop_when_asked():
        await person.waiting.wait()
        cancel.cancel()

    stopper = asyncio.ensure_future(stop_when_asked())
    events, outcome = await run(
        mock_agent.spec("/edit notes.md new line", policy=PermissionPolicy.ASK),
        person,
        cancel=cancel,
    )
    await stopper

    assert isinstance(outcome, PromptCompleted)
    assert outcome.stop_reason == "cancelled"
    assert (mock_agent.cwd / "notes.md").read_text() == "old line\n"
    assert [(p.granted, p.option_kind) for p in permissions(events)] == [(False, None)]


async def test_the_prompt_timeout_does_not_run_while_a_person_thinks(mock_agent):
    clock = FakeClock()
    (mock_agent.cwd / "notes.md").write_text("old line\n")
    person = Person(clock=clock, think_s=3_600)

    _, outcome = await run(
        mock_agent.spec(
            "/edit notes.md new line", policy=PermissionPolicy.ASK, prompt_timeout_s=60
        ),
        person,
        clock=clock,
    )

    assert isinstance(outcome, PromptCompleted)
    assert (mock_agent.cwd / "notes.md").read_text() == "new line\n"


async def test_waiting_past_the_ask_budget_counts_against_the_prompt_timeout(mock_agent):
    clock = FakeClock()
    person = Person(clock=clock, think_s=3_600)

    _, outcome = await run(
        mock_agent.spec(
            "/exec make deploy",
            policy=PermissionPolicy.ASK,
            prompt_timeout_s=60,
            ask_budget_s=1_800,
        ),
        person,
        clock=clock,
    )

    assert isinstance(outcome, PromptFailure)
    assert outcome.evidence.kind is Kind.TIMEOUT


def test_a_deadline_stands_still_while_paused_and_counts_past_its_budget():
    clock = FakeClock()
    deadline = PausableDeadline(limit_s=60, clock=clock, pause_budget_s=100)
    clock.advance(10)
    assert deadline.remaining() == 50
    deadline.pause()
    deadline.pause()  # a second request asked at once
    clock.advance(80)
    deadline.resume()
    assert deadline.paused
    deadline.resume()
    assert deadline.remaining() == 50
    deadline.pause()
    clock.advance(40)  # 120 s paused in all: 20 past the budget
    deadline.resume()
    assert deadline.remaining() == 30
    assert not deadline.expired()
    clock.advance(30)
    assert deadline.expired()
