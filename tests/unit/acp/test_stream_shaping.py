"""Conversion (where the diagnostic marker is decided) and the stream shaper (Cursor hold-back,
response-attempt boundaries)."""

from __future__ import annotations

import dataclasses

import pytest

from recovery.mock.acp_scenarios import CURSOR_FRAMES, CURSOR_TRANSIENT
from recovery.providers.acp import (
    AgentText,
    AgentThought,
    AgentToolCall,
    ModelSettled,
    ResponseAttemptBoundary,
)
from recovery.providers.acp.convert import MOCK_RETRY_MARKER, update_events
from recovery.providers.acp.shaping import StreamShaper


def chunk(text: str, kind: str = "agent_message_chunk") -> dict:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


def codex_info(error: object) -> dict:
    return {"sessionUpdate": "session_info_update", "error": error}


DISCONNECTED = {"responseStreamDisconnected": {"httpStatusCode": None}}


def test_a_provider_error_line_is_marked_once_at_conversion():
    (event,) = update_events(chunk("API Error: 529 Overloaded. This is a server-side issue."))

    assert event == AgentText(
        text="API Error: 529 Overloaded. This is a server-side issue.", diagnostic=True
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.diagnostic = False  # type: ignore[misc]


def test_prose_quoting_an_error_is_ordinary_output():
    (event,) = update_events(chunk("Earlier I saw API Error: 529 Overloaded, so I waited."))

    assert event.diagnostic is False


def test_a_hard_failure_line_is_not_a_diagnostic_candidate():
    (event,) = update_events(
        chunk("All account credentials were refused by the upstream provider.")
    )

    assert event.diagnostic is False


def test_thought_chunks_are_marked_the_same_way():
    (event,) = update_events(chunk("API Error: 502 Bad Gateway", kind="agent_thought_chunk"))

    assert event == AgentThought(text="API Error: 502 Bad Gateway", diagnostic=True)


def test_ordinary_text_loses_credentials_but_keeps_paths():
    (event,) = update_events(
        chunk("Set ANTHROPIC_API_KEY=sk-ant-test-000000000 in ./src/app/settings.py")
    )

    assert "sk-ant-test" not in event.text
    assert "./src/app/settings.py" in event.text


def test_the_codex_retry_shape_is_a_boundary_from_codex():
    error = {"message": "stream disconnected", "willRetry": True, "codexErrorInfo": DISCONNECTED}

    assert update_events(codex_info(error), agent="codex-acp") == (
        ResponseAttemptBoundary(attempt=0),
    )


@pytest.mark.parametrize("agent", [None, "", "claude-code-acp", "gemini-cli", "Codex-ACP", "codex"])
def test_retry_evidence_from_an_unsupported_adapter_is_not_a_boundary(agent):
    error = {"message": "stream disconnected", "willRetry": True, "codexErrorInfo": DISCONNECTED}
    marked = {"sessionUpdate": "session_info_update", "_meta": {MOCK_RETRY_MARKER: True}}

    assert update_events(codex_info(error), agent=agent) == ()
    assert update_events(marked, agent=agent) == ()


def test_each_adapter_is_trusted_only_with_its_own_shape():
    error = {"message": "stream disconnected", "willRetry": True, "codexErrorInfo": DISCONNECTED}
    marked = {"sessionUpdate": "session_info_update", "_meta": {MOCK_RETRY_MARKER: True}}

    assert update_events(codex_info(error), agent="kandev-mock-agent") == ()
    assert update_events(marked, agent="codex-acp") == ()


@pytest.mark.parametrize(
    "error",
    [
        {"willRetry": False, "codexErrorInfo": DISCONNECTED},
        {"willRetry": "true", "codexErrorInfo": DISCONNECTED},
        {"willRetry": True, "codexErrorInfo": {"responseStreamDisconnected": "yes"}},
        {"willRetry": True, "codexErrorInfo": {"other": {}}},
        {"willRetry": True},
        "willRetry",
        None,
    ],
    ids=["false", "string-flag", "not-an-object", "other-info", "no-info", "string", "none"],
)
def test_malformed_or_final_codex_errors_are_not_boundaries(error):
    assert update_events(codex_info(error), agent="codex-acp") == ()


def test_the_mock_marker_is_a_boundary_and_a_false_marker_is_not():
    marked = {"sessionUpdate": "session_info_update", "_meta": {MOCK_RETRY_MARKER: True}}
    unmarked = {"sessionUpdate": "session_info_update", "_meta": {MOCK_RETRY_MARKER: "true"}}

    assert update_events(marked, agent="kandev-mock-agent") == (ResponseAttemptBoundary(attempt=0),)
    assert update_events(unmarked, agent="kandev-mock-agent") == ()


def test_a_model_selector_settles_the_model():
    update = {
        "sessionUpdate": "config_option_update",
        "configOptions": [
            {"id": "mode", "type": "select", "currentValue": "plan"},
            {"id": "model", "category": "model", "type": "select", "currentValue": "gpt-5"},
        ],
    }

    assert update_events(update) == (ModelSettled(model_id="gpt-5"),)


def test_an_empty_or_malformed_model_selector_settles_nothing():
    for value in ("", "https://evil.example/x", 7):
        update = {
            "sessionUpdate": "config_option_update",
            "configOptions": [{"id": "model", "type": "select", "currentValue": value}],
        }
        assert update_events(update) == ()


def shaped(events, *, cursor=True):
    shaper = StreamShaper(cursor_agent=cursor)
    out = [shown for event in events for shown in shaper.feed(event)]
    return shaper, out


def frame(name: str) -> AgentText:
    (event,) = update_events(chunk(CURSOR_FRAMES[name]))
    return event


@pytest.mark.parametrize("name", sorted(CURSOR_TRANSIENT))
def test_a_cursor_frame_that_nothing_follows_is_held_back_and_becomes_the_failure(name):
    shaper, out = shaped([frame(name)])

    assert out == []
    assert shaper.take_held() == CURSOR_FRAMES[name]


@pytest.mark.parametrize("name", sorted(set(CURSOR_FRAMES) - CURSOR_TRANSIENT))
def test_cursor_negatives_stay_ordinary_output(name):
    shaper, out = shaped([frame(name)])

    assert [event.text for event in out] == [CURSOR_FRAMES[name]]
    assert shaper.take_held() is None


def test_a_cursor_frame_followed_by_output_was_telemetry_and_is_released_first():
    shaper, out = shaped([frame("stalled"), AgentText(text="Reconnected.")])

    assert out == [frame("stalled"), AgentText(text="Reconnected.")]
    assert shaper.take_held() is None


def test_a_second_frame_supersedes_the_first():
    shaper, out = shaped([frame("ping"), frame("stalled")])

    assert out == [frame("ping")]
    assert shaper.take_held() == CURSOR_FRAMES["stalled"]


def test_other_agents_frames_are_never_held():
    shaper, out = shaped([frame("stalled")], cursor=False)

    assert out == [frame("stalled")]
    assert shaper.take_held() is None


def test_a_boundary_with_output_before_it_is_passed_on_and_numbered():
    _, out = shaped(
        [
            AgentText(text="draft"),
            ResponseAttemptBoundary(attempt=0),
            AgentText(text="second draft"),
            ResponseAttemptBoundary(attempt=0),
        ]
    )

    assert [event for event in out if isinstance(event, ResponseAttemptBoundary)] == [
        ResponseAttemptBoundary(attempt=1),
        ResponseAttemptBoundary(attempt=2),
    ]


def test_a_repeated_boundary_with_no_new_output_is_a_no_op():
    _, out = shaped(
        [
            AgentText(text="draft"),
            ResponseAttemptBoundary(attempt=0),
            ResponseAttemptBoundary(attempt=0),
        ]
    )

    assert out.count(ResponseAttemptBoundary(attempt=1)) == 1
    assert len(out) == 2


def test_a_tool_call_is_a_commit_boundary_so_a_boundary_after_it_retracts_nothing():
    tool = AgentToolCall(id="t1", title="Read", kind="read", status="pending")

    _, out = shaped([AgentText(text="committed"), tool, ResponseAttemptBoundary(attempt=0)])

    assert out == [AgentText(text="committed"), tool]


def test_the_mock_agent_and_the_adapter_agree_on_the_retry_marker():
    from recovery.mock.acp_scenarios import RETRY_MARKER

    assert RETRY_MARKER == MOCK_RETRY_MARKER
