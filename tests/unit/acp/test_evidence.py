"""The evidence layer: what an attempt showed, and whether the whole prompt may be replayed.

Each failure is built by the adapter (``failure_build``) and judged by the judge's replay step,
as in production."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from recovery.judge import judge_replay
from recovery.providers.acp import (
    AgentPermission,
    AgentText,
    AgentThought,
    AgentToolCall,
    AgentToolCallUpdate,
    AttemptEvidence,
    Correlation,
    ReplayDisposition,
    ReplayReason,
    ResponseAttemptBoundary,
    TerminalError,
    evidence_observe,
    evidence_start,
    failure_build,
    normalise_text,
)
from recovery.taxonomy import Source

CURRENT = Correlation(session_id="s-1", execution_id="e-1", generation=2)
STALE = Correlation(session_id="s-1", execution_id="e-1", generation=1)
DIAG_529 = (
    "API Error: 529 Overloaded. This is a server-side issue, usually temporary — "
    "try again in a moment."
)
ERROR_529 = "Internal error: " + DIAG_529 + " If it persists, check the status page."
ERROR_500 = "Internal error: API Error: 500 Internal server error."


def replay_disposition(
    *, evidence: AttemptEvidence, message: str, current: Correlation = CURRENT, data: Any = None
) -> ReplayDisposition:
    """What the judge answers for a JSON-RPC prompt error ``message`` after ``evidence``."""
    failure = failure_build(
        terminal=TerminalError(
            source=Source.ACP_PROMPT, message=message, jsonrpc_code=-32603, data=data
        ),
        attempt=evidence,
        correlation=current,
        provider_id=None,
        model_id=None,
    )
    return judge_replay(evidence=failure.evidence, replay=failure.replay_facts).replay


def fed(*events, correlation: Correlation = CURRENT, start: Correlation = CURRENT):
    state = evidence_start(correlation=start)
    for event in events:
        state = evidence_observe(state, event, correlation=correlation)
    return state


def test_it_allows_a_replay_when_the_attempt_showed_nothing_and_the_error_is_transient():
    disposition = replay_disposition(evidence=fed(), message=ERROR_529)

    assert (disposition.retry_allowed, disposition.reason) == (True, ReplayReason.PRE_RESULT_SAFE)


def test_a_matching_diagnostic_authorises_the_replay():
    state = fed(AgentText(text=DIAG_529, diagnostic=True))

    disposition = replay_disposition(evidence=state, message=ERROR_529)

    assert disposition.reason is ReplayReason.DIAGNOSTIC_MATCHED
    assert disposition.retry_allowed


def test_a_diagnostic_of_another_code_stops_the_replay():
    state = fed(AgentText(text=DIAG_529, diagnostic=True))

    disposition = replay_disposition(evidence=state, message=ERROR_500)

    assert (disposition.retry_allowed, disposition.reason) == (
        False,
        ReplayReason.DIAGNOSTIC_MISMATCH,
    )


def test_a_same_code_diagnostic_whose_text_is_not_in_the_error_stops_the_replay():
    prose = "API Error: 529 Overloaded. I will wait a little and then try again."
    state = fed(AgentText(text=prose, diagnostic=True))

    disposition = replay_disposition(evidence=state, message=ERROR_529)

    assert disposition.reason is ReplayReason.DIAGNOSTIC_TEXT_NOT_CONTAINED


def test_containment_ignores_surrounding_and_repeated_whitespace_but_not_case():
    spaced = (
        "  API Error: 529 Overloaded. This is a server-side   issue, usually\ttemporary — "
        "try again in a moment.  "
    )
    shouting = DIAG_529.replace("Overloaded", "OVERLOADED")

    matched = replay_disposition(
        evidence=fed(AgentText(text=spaced, diagnostic=True)), message=ERROR_529
    )
    upper = replay_disposition(
        evidence=fed(AgentText(text=shouting, diagnostic=True)), message=ERROR_529
    )

    assert matched.retry_allowed
    assert not upper.retry_allowed


def test_the_first_diagnostic_of_a_generation_is_kept():
    later = "API Error: 502 Bad Gateway"
    state = fed(AgentText(text=DIAG_529, diagnostic=True), AgentText(text=later, diagnostic=True))

    assert state.diagnostic is not None
    assert state.diagnostic.text == normalise_text(DIAG_529)


def test_unmarked_output_clears_the_diagnostic_and_counts_as_output():
    state = fed(AgentText(text=DIAG_529, diagnostic=True), AgentThought(text="Retrying."))

    assert state.diagnostic is None
    assert state.output_seen
    assert replay_disposition(evidence=state, message=ERROR_529).reason is ReplayReason.OUTPUT_SEEN


def test_whitespace_only_output_is_not_progress_and_clears_nothing():
    state = fed(AgentText(text=DIAG_529, diagnostic=True), AgentText(text="  \n "))

    assert not state.output_seen
    assert state.diagnostic is not None


def test_tool_activity_keeps_the_diagnostic_but_makes_the_attempt_unsafe():
    state = fed(
        AgentText(text=DIAG_529, diagnostic=True),
        AgentToolCall(id="t1", title="Read", kind="read", status="pending"),
    )

    disposition = replay_disposition(evidence=state, message=ERROR_529)

    assert state.diagnostic is not None
    assert (disposition.retry_allowed, disposition.reason) == (False, ReplayReason.TOOL_ACTIVITY)


def test_a_permission_request_or_tool_update_alone_is_tool_activity():
    for event in (
        AgentPermission(tool_call_id="t1", granted=False, option_kind="reject_once"),
        AgentToolCallUpdate(id="t1", status="completed", content=""),
    ):
        assert fed(event).tool_activity


def test_a_response_attempt_boundary_never_clears_output_or_tool_evidence():
    state = fed(
        AgentText(text="Abandoned draft."),
        AgentToolCall(id="t1", title="Read", kind="read", status="pending"),
        ResponseAttemptBoundary(attempt=1),
    )

    assert (state.output_seen, state.tool_activity, state.boundaries) == (True, True, 1)


def test_evidence_from_a_stale_generation_is_ignored_and_cannot_authorise():
    state = fed(AgentText(text="from an older attempt"), correlation=STALE)

    assert (state.output_seen, state.ignored) == (False, 1)
    stale = replay_disposition(evidence=fed(start=STALE), message=ERROR_529)
    assert (stale.retry_allowed, stale.reason) == (False, ReplayReason.NOT_CURRENT)


def test_generation_zero_never_authorises():
    zero = Correlation(session_id="s-1", execution_id="e-1", generation=0)

    disposition = replay_disposition(
        evidence=fed(start=zero, correlation=zero), message=ERROR_529, current=zero
    )

    assert disposition.reason is ReplayReason.NOT_CURRENT


def test_a_signature_only_in_data_is_terminal_with_its_own_reason():
    disposition = replay_disposition(
        evidence=fed(),
        message="Internal error",
        data={"details": "peer disconnected before response"},
    )

    assert (disposition.retry_allowed, disposition.reason) == (
        False,
        ReplayReason.SIGNATURE_ONLY_IN_DATA,
    )


_events = st.lists(
    st.one_of(
        st.builds(
            AgentText, text=st.sampled_from(["", " ", "ok", DIAG_529]), diagnostic=st.booleans()
        ),
        st.builds(
            AgentThought, text=st.sampled_from(["", "hmm", DIAG_529]), diagnostic=st.booleans()
        ),
        st.builds(
            AgentToolCall,
            id=st.just("t"),
            title=st.just("T"),
            kind=st.just("read"),
            status=st.just("pending"),
        ),
        st.builds(ResponseAttemptBoundary, attempt=st.integers(1, 3)),
    ),
    max_size=8,
)


@given(events=_events, message=st.sampled_from([ERROR_529, ERROR_500, "Internal error"]))
def test_no_sequence_with_output_or_tools_is_ever_replayable(events, message):
    state = fed(*events)

    disposition = replay_disposition(evidence=state, message=message)

    if state.output_seen or state.tool_activity:
        assert not disposition.retry_allowed
    if disposition.retry_allowed:
        assert not any(isinstance(event, AgentToolCall) for event in events)


@given(events=_events)
def test_stale_events_leave_the_current_attempt_untouched(events):
    state = fed(*events, correlation=STALE)

    assert state == AttemptEvidence(correlation=CURRENT, ignored=len(events))
    assert state.diagnostic is None
