"""The real mock ACP agent process, driven through the adapter for each scenario."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import astuple

import pytest

from recovery.guard import CancelToken
from recovery.mock.acp_scenarios import CURSOR_FRAMES
from recovery.providers.acp import (
    AcpPromptRun,
    AgentPermission,
    AgentText,
    PermissionPolicy,
    PromptCompleted,
    PromptFailure,
    ReplayReason,
    acp_prompt_iter,
)
from recovery.providers.acp.replay_fixtures.consume import event_token, failure_judged
from recovery.taxonomy import Code, Exposure, Kind, Source


async def run(spec, cancel=None):
    events = []
    outcome = await AcpPromptRun(spec=spec, on_event=events.append, cancel=cancel).execute()
    return events, outcome


def tokens(events):
    return [event_token(event) for event in events]


async def test_it_streams_a_plain_answer_with_a_thought_and_settles_the_model(mock_agent):
    events, outcome = await run(mock_agent.spec("what is up"))

    assert tokens(events)[:3] == ["model", "thought", "text"]
    assert tokens(events)[-1] == "end:end_turn"
    assert (
        "".join(e.text for e in events if isinstance(e, AgentText))
        == "Mock agent reply to: what is up"
    )
    assert isinstance(outcome, PromptCompleted)
    assert outcome.model_id == "mock-sonnet"
    assert outcome.evidence.output_seen


async def test_overloaded_fails_the_first_n_prompts_across_relaunches_then_recovers(mock_agent):
    spec = mock_agent.spec("/overloaded:2 summarise the notes")

    first = (await run(spec))[1]
    second = (await run(spec))[1]
    third = (await run(spec))[1]

    for failure in (first, second):
        assert isinstance(failure, PromptFailure)
        assert failure_judged(failure).classification.code is Code.PROVIDER_OVERLOADED
        assert astuple(failure_judged(failure).replay) == (
            True,
            ReplayReason.PRE_RESULT_SAFE,
        )
        assert failure_judged(failure).evidence.exposure is Exposure.NONE
        assert failure.metadata.error_kind == "server_error"
        assert failure.metadata.jsonrpc_code == -32603
        assert failure.metadata.provider_id == "kandev-mock-agent"
        assert failure.metadata.model_id == "mock-sonnet"
    assert isinstance(third, PromptCompleted)


async def test_a_model_is_not_reported_when_the_agent_never_settled_one(mock_agent):
    _, failure = await run(mock_agent.spec("/overloaded", "--model", ""))

    assert failure.metadata.model_id is None
    assert failure.evidence.model_id is None


async def test_transport_loss_only_in_data_is_manual_every_time_and_data_never_crosses(mock_agent):
    spec = mock_agent.spec("/transport-lost")

    for _ in range(2):
        _, failure = await run(spec)
        assert failure_judged(failure).classification.code is Code.UNCLASSIFIED
        assert astuple(failure_judged(failure).replay) == (
            False,
            ReplayReason.SIGNATURE_ONLY_IN_DATA,
        )
        assert "peer disconnected" not in repr(failure)


async def test_model_capacity_is_a_replayable_transient_failure(mock_agent):
    _, failure = await run(mock_agent.spec("/capacity:1"))

    assert failure_judged(failure).classification.code is Code.MODEL_CAPACITY
    assert failure_judged(failure).replay.retry_allowed


@pytest.mark.parametrize(
    ("command", "allowed", "reason"),
    [
        ("/diag-matched", True, ReplayReason.DIAGNOSTIC_MATCHED),
        ("/diag-mismatched", False, ReplayReason.DIAGNOSTIC_MISMATCH),
        ("/diag-prose", False, ReplayReason.DIAGNOSTIC_TEXT_NOT_CONTAINED),
        ("/output-then-fail", False, ReplayReason.OUTPUT_SEEN),
        ("/tool-then-fail", False, ReplayReason.TOOL_ACTIVITY),
    ],
)
async def test_what_came_before_the_error_decides_the_replay(mock_agent, command, allowed, reason):
    events, failure = await run(mock_agent.spec(command))

    assert astuple(failure_judged(failure).replay) == (allowed, reason)
    if command.startswith("/diag"):
        # The diagnostic stays visible in the transcript, marked at conversion.
        assert [e.diagnostic for e in events if isinstance(e, AgentText)] == [True]
    if not allowed:
        assert failure_judged(failure).evidence.exposure in (Exposure.CONTENT, Exposure.TOOL_CALL)


async def test_tool_activity_is_reported_with_the_permission_answer(mock_agent):
    events, failure = await run(mock_agent.spec("/tool-then-fail"))

    assert tokens(events)[1:4] == ["tool_call", "permission", "tool_call_update"]
    assert [e.granted for e in events if isinstance(e, AgentPermission)] == [True]
    assert failure_judged(failure).evidence.exposure is Exposure.TOOL_CALL


async def test_a_deny_all_policy_refuses_even_a_read(mock_agent):
    events, outcome = await run(mock_agent.spec("/tool:read", policy=PermissionPolicy.DENY_ALL))

    assert [e.granted for e in events if isinstance(e, AgentPermission)] == [False]
    assert any(getattr(e, "status", None) == "failed" for e in events)
    assert isinstance(outcome, PromptCompleted)


async def test_a_response_retry_yields_one_boundary_between_abandoned_and_replacement_output(
    mock_agent,
):
    events, outcome = await run(mock_agent.spec("/response-retry"))

    assert tokens(events) == ["model", "thought", "text", "boundary", "text", "end:end_turn"]
    assert events[-2].text == "This is the replacement answer."
    # Retraction does not erase what decides a replay: output was produced.
    assert outcome.evidence.output_seen and outcome.evidence.boundaries == 1


async def test_the_same_retry_marker_from_an_unsupported_adapter_is_not_a_boundary(mock_agent):
    events, _ = await run(mock_agent.spec("/response-retry", "--identity", "claude-code-acp"))

    assert "boundary" not in tokens(events)
    # Nothing is taken back: the abandoned text stays ordinary output.
    assert tokens(events) == ["model", "thought", "text", "text", "end:end_turn"]


@pytest.mark.parametrize(
    ("variant", "code"),
    [
        ("stream-cancel", Code.AGENT_TRANSPORT_LOST),
        ("canceled-before", Code.AGENT_TRANSPORT_LOST),
        ("canceled-after", Code.AGENT_TRANSPORT_LOST),
        ("ping", Code.AGENT_TRANSPORT_LOST),
        ("stalled", Code.AGENT_TRANSPORT_LOST),
        ("exhausted", Code.PROVIDER_RESOURCE_EXHAUSTED),
        ("other-suffix", Code.AGENT_TRANSPORT_LOST),
        ("canceled-only", Code.AGENT_TRANSPORT_LOST),
    ],
)
async def test_a_trailing_cursor_frame_is_held_back_and_becomes_one_failure(
    mock_agent, variant, code
):
    events, failure = await run(mock_agent.spec(f"/cursor:{variant}", "--identity", "cursor-agent"))

    assert tokens(events) == ["model"]
    assert isinstance(failure, PromptFailure)
    assert failure.evidence.source is Source.ACP_CHUNK
    assert failure_judged(failure).classification.code is code
    assert astuple(failure_judged(failure).replay) == (
        True,
        ReplayReason.PRE_RESULT_SAFE,
    )


@pytest.mark.parametrize("variant", ["quota", "context-canceled", "prose", "long"])
async def test_cursor_negatives_are_ordinary_output(mock_agent, variant):
    events, outcome = await run(mock_agent.spec(f"/cursor:{variant}", "--identity", "cursor-agent"))

    assert [e.text for e in events if isinstance(e, AgentText)] == [CURSOR_FRAMES[variant]]
    assert isinstance(outcome, PromptCompleted)


async def test_a_cursor_frame_the_agent_recovers_from_authorises_nothing(mock_agent):
    events, outcome = await run(mock_agent.spec("/cursor:resumed", "--identity", "cursor-agent"))

    # The superseded frame is shown as ordinary output (a transport loss is never a diagnostic),
    # so nothing could replay the prompt on its account.
    assert tokens(events) == ["model", "text", "text", "end:end_turn"]
    assert isinstance(outcome, PromptCompleted)
    assert outcome.evidence.output_seen


async def test_cursor_frames_from_other_agents_are_not_held(mock_agent):
    events, outcome = await run(mock_agent.spec("/cursor:stalled"))

    assert tokens(events) == ["model", "text", "end:end_turn"]
    assert isinstance(outcome, PromptCompleted)


async def test_a_crash_becomes_exit_evidence_with_the_stderr_tail(mock_agent):
    _, failure = await run(mock_agent.spec("/crash"))

    assert failure.evidence.source is Source.EXIT
    assert "simulated crash" in failure.message
    assert "status 3" in failure.message
    assert not failure_judged(failure).replay.retry_allowed


async def test_a_missing_agent_command_is_a_failure_not_an_exception(mock_agent, tmp_path):
    broken = dataclasses.replace(
        mock_agent.spec("hello"), command=(str(tmp_path / "no-such-agent"),)
    )

    _, failure = await run(broken)

    assert failure.evidence.source is Source.EXIT
    assert not failure_judged(failure).replay.retry_allowed


async def test_the_prompt_sent_is_credential_redacted(mock_agent):
    await run(mock_agent.spec("use ANTHROPIC_API_KEY=sk-ant-test-000000000 for this"))

    (received,) = [json.loads(line) for line in mock_agent.record.read_text().splitlines()]
    assert "sk-ant-test" not in received
    assert "[REDACTED]" in received


def test_the_blocking_iterator_cancels_a_slow_prompt_and_ends_with_the_outcome(mock_agent):
    token = CancelToken()
    seen = []
    for item in acp_prompt_iter(
        mock_agent.spec("/slow:100 one two three four five six"), cancel=token
    ):
        seen.append(item)
        if isinstance(item, AgentText):
            token.cancel()

    assert isinstance(seen[-1], PromptCompleted)
    assert seen[-1].stop_reason == "cancelled"
    assert sum(isinstance(item, AgentText) for item in seen) < 7


async def test_an_agent_that_ignores_cancel_is_stopped_after_the_grace(mock_agent):
    token = CancelToken()
    token.cancel()

    _, failure = await run(mock_agent.spec("/hang", cancel_grace_s=0.2), cancel=token)

    assert failure_judged(failure).classification.code is Code.CANCELLED
    assert failure.evidence.kind is Kind.CANCELLED


async def test_a_prompt_past_its_timeout_fails_as_a_timeout(mock_agent):
    _, failure = await run(mock_agent.spec("/hang", prompt_timeout_s=0.3, cancel_grace_s=0.2))

    assert failure.evidence.kind is Kind.TIMEOUT
    # Nothing was shown and a timeout is transient.
    assert failure_judged(failure).replay.retry_allowed
