"""How a failed ACP prompt is recovered: a whole-prompt retry only with proof that the attempt
showed nothing, otherwise manual recovery with no banner ever."""

from __future__ import annotations

import pytest

from sessions_app.ladder.models import AttemptRecord, RetryLoop, RetryNotice
from sessions_app.models import Message, PromptGeneration, Session, SessionEvent
from sessions_app.selectors import session_snapshot
from tests.integration.acp_app.conftest import (
    event_kinds,
    prompts_received,
    rows,
    run_prompt,
    run_retry,
)

pytestmark = pytest.mark.django_db(transaction=True)

State = PromptGeneration.State


def test_an_overloaded_agent_waits_visibly_and_the_whole_prompt_recovers_in_a_new_process(
    chat, owner, clock, agent_state
):
    generation = run_prompt(chat, owner, "/overloaded:2 summarise the notes", clock)

    chat.refresh_from_db()
    assert generation.state == State.WAITING_RETRY
    assert chat.state == Session.State.WAITING_RETRY
    notice = session_snapshot(session=chat)["notice"]
    assert (notice["reason"], notice["provider"], notice["model"]) == (
        "Provider overloaded",
        "Mock agent",
        "mock-sonnet",
    )
    assert (notice["attempt"], notice["max_attempts"]) == (1, 5)
    assert rows(chat) == [("user", "/overloaded:2 summarise the notes")]

    generation = run_retry(generation, clock)
    assert generation.state == State.WAITING_RETRY
    assert session_snapshot(session=chat)["notice"]["attempt"] == 2
    generation = run_retry(generation, clock)

    chat.refresh_from_db()
    assert generation.state == State.SUCCEEDED
    assert chat.state == Session.State.IDLE
    assert session_snapshot(session=chat)["notice"] is None
    assert not RetryNotice.objects.live().exists()
    assert RetryLoop.objects.get(generation=generation).state == RetryLoop.State.SUCCEEDED
    # Three prompts, each the person's own text, each to a freshly started agent process.
    assert prompts_received(agent_state) == ["/overloaded:2 summarise the notes"] * 3
    assert rows(chat) == [
        ("user", "/overloaded:2 summarise the notes"),
        ("thinking", "Considering the request."),
        ("assistant", "Mock agent reply to: summarise the notes"),
    ]
    assert not Message.objects.filter(session=chat, incomplete=True).exists()
    # Each wait shows its banner, each claimed attempt re-shows it as "Retrying now…".
    assert event_kinds(chat, "notice.") == ["notice.upserted"] * 4 + ["notice.deleted"]
    # The banner goes before the recovered answer's first row is pushed.
    retired = SessionEvent.objects.get(session=chat, type="notice.deleted").seq
    first_row = (
        SessionEvent.objects.filter(session=chat, type="message.created", seq__gt=1)
        .exclude(payload__message__role="user")
        .order_by("seq")
        .first()
    )
    assert retired < first_row.seq
    assert list(
        AttemptRecord.objects.filter(generation=generation)
        .order_by("id")
        .values_list("code", "decision")
    ) == [("provider_overloaded", "retry")] * 2 + [("none", "success")]


def test_a_lost_transport_is_manual_every_time_without_a_notice(chat, owner, clock):
    first = run_prompt(chat, owner, "/transport-lost check the build", clock)
    second = run_prompt(chat, owner, "/transport-lost check the build", clock)

    chat.refresh_from_db()
    for generation in (first, second):
        assert generation.state == State.FAILED
        assert "not known to be temporary" in generation.error_message
        # The signature lived only in JSON-RPC data, which never crosses into what we store.
        assert "peer disconnected" not in generation.error_message
    assert chat.state == Session.State.NEEDS_ATTENTION
    assert session_snapshot(session=chat)["recovery_actions"] == ["resume", "fresh"]
    assert event_kinds(chat, "notice.") == []
    assert not RetryLoop.objects.exists()
    # Each failed prompt was judged once and recorded once, as handed back.
    assert list(AttemptRecord.objects.order_by("id").values_list("decision", flat=True)) == [
        "manual",
        "manual",
    ]


@pytest.mark.parametrize(
    ("command", "reason", "partial_role"),
    [
        ("/output-then-fail", "already started answering", "assistant"),
        ("/tool-then-fail", "already used a tool", "tool_call"),
    ],
)
def test_a_failure_after_output_or_tool_activity_is_manual_and_keeps_the_partial(
    chat, owner, clock, command, reason, partial_role, agent_state
):
    generation = run_prompt(chat, owner, f"{command} write the report", clock)

    assert generation.state == State.FAILED
    assert generation.error_code == "provider_overloaded"
    assert reason in generation.error_message
    assert "kept and marked incomplete" in generation.error_message
    assert event_kinds(chat, "notice.") == []
    assert not RetryLoop.objects.exists()
    assert len(prompts_received(agent_state)) == 1  # never sent again
    partial = Message.objects.get(session=chat, role=partial_role)
    assert partial.text
    if partial_role == "assistant":
        assert (partial.incomplete, partial.status) == (True, "error")
    else:
        # The tool did run (permission granted for a read): its row says so and stays.
        assert partial.status == "complete"
        assert partial.metadata["status"] == "completed"
        assert partial.metadata["permission"] == {"granted": True, "option_kind": "allow_once"}


def test_a_diagnostic_line_that_matches_the_error_still_allows_the_retry(chat, owner, clock):
    generation = run_prompt(chat, owner, "/diag-matched:1 plan the sprint", clock)

    assert generation.state == State.WAITING_RETRY
    assert session_snapshot(session=chat)["notice"]["attempt"] == 1
    # The agent's own diagnostic line stays visible, marked as part of an unfinished attempt.
    diagnostic = Message.objects.get(session=chat, role="assistant")
    assert diagnostic.text.startswith("API Error: 529 Overloaded.")
    assert diagnostic.incomplete

    generation = run_retry(generation, clock)

    assert generation.state == State.SUCCEEDED
    answers = Message.objects.filter(session=chat, role="assistant").order_by("id")
    assert [m.incomplete for m in answers] == [True, False]
    assert answers.last().text == "Mock agent reply to: plan the sprint"


def test_a_retried_attempt_that_prints_its_diagnostic_again_keeps_the_one_banner(
    chat, owner, clock
):
    generation = run_prompt(chat, owner, "/diag-matched:2 plan the sprint", clock)
    first = session_snapshot(session=chat)["notice"]

    generation = run_retry(generation, clock)  # prints the 529 line again, then fails again

    assert generation.state == State.WAITING_RETRY
    second = session_snapshot(session=chat)["notice"]
    assert (second["id"], second["attempt"]) == (first["id"], 2)  # updated in place
    assert RetryNotice.objects.filter(session=chat).count() == 1
    assert event_kinds(chat, "notice.") == ["notice.upserted"] * 3  # shown, retrying now, shown

    generation = run_retry(generation, clock)

    assert generation.state == State.SUCCEEDED
    assert event_kinds(chat, "notice.") == ["notice.upserted"] * 4 + ["notice.deleted"]


def test_a_diagnostic_line_that_disagrees_with_the_error_is_manual(chat, owner, clock):
    generation = run_prompt(chat, owner, "/diag-mismatched:1 plan the sprint", clock)

    assert generation.state == State.FAILED
    assert "reported a different problem" in generation.error_message
    assert event_kinds(chat, "notice.") == []
    assert not RetryLoop.objects.exists()


def test_exhausting_the_budget_ends_in_an_honest_card(chat, owner, clock, retry_settings):
    retry_settings(max_attempts=2)
    generation = run_prompt(chat, owner, "/overloaded:9 hi", clock)
    run_retry(generation, clock)
    generation = run_retry(generation, clock)

    chat.refresh_from_db()
    assert generation.state == State.FAILED
    assert generation.error_code == "provider_overloaded"
    assert chat.state == Session.State.NEEDS_ATTENTION
    assert session_snapshot(session=chat)["notice"] is None
    assert RetryLoop.objects.get(generation=generation).state == RetryLoop.State.EXHAUSTED
    assert Message.objects.filter(session=chat).exclude(role="user").count() == 0
