"""The mock ACP agent takes the same marker as the mock provider, and counts per session."""

from __future__ import annotations

import dataclasses

from recovery.providers.acp import AcpPromptRun, AgentText, PromptCompleted, PromptFailure


async def outcome_of(spec):
    events = []
    outcome = await AcpPromptRun(spec=spec, on_event=events.append).execute()
    return outcome, "".join(e.text for e in events if isinstance(e, AgentText))


async def test_a_marker_anywhere_in_the_prompt_picks_the_scenario(mock_agent):
    spec = mock_agent.spec("summarise the notes [[mock:overloaded:1]]")

    failed, _ = await outcome_of(spec)
    answered, text = await outcome_of(spec)

    assert isinstance(failed, PromptFailure) and isinstance(answered, PromptCompleted)
    assert text == "Mock agent reply to: summarise the notes"


async def test_a_script_that_has_played_starts_over_for_the_next_session(mock_agent):
    spec = mock_agent.spec("[[mock:overloaded:1]] hi")

    outcomes = [(await outcome_of(spec))[0] for _ in range(4)]

    assert [type(o).__name__ for o in outcomes] == [
        "PromptFailure",
        "PromptCompleted",
        "PromptFailure",
        "PromptCompleted",
    ]


async def test_sessions_in_their_own_working_directories_count_apart(mock_agent, tmp_path):
    other_dir = tmp_path / "other-session"
    other_dir.mkdir()
    first = mock_agent.spec("[[mock:overloaded:1]] hi")
    second = dataclasses.replace(first, cwd=str(other_dir))

    outcomes = [(await outcome_of(spec))[0] for spec in (first, second, first, second)]

    assert [type(o).__name__ for o in outcomes] == [
        "PromptFailure",
        "PromptFailure",
        "PromptCompleted",
        "PromptCompleted",
    ]
