"""What a viewer sees of an ACP prompt: rows written through the coalescing writer, tool calls
revised in place, abandoned response attempts taken back before their replacement shows, Stop."""

from __future__ import annotations

import json
import random
import threading

import pytest
from django.db import connection

from devtools.eventually import eventually
from recovery.providers.acp import AgentText, AgentThought, AgentToolCall, ResponseAttemptBoundary
from sessions_app.agent.runner import generation_run
from sessions_app.agent.turn import Turn
from sessions_app.models import Message, PromptGeneration, SessionEvent
from sessions_app.selectors import events_after, session_snapshot
from sessions_app.services import message_create, prompt_submit, session_stop
from sessions_app.services.prompts import session_recover
from tests.integration.acp_app.conftest import event_kinds, rows, run_prompt
from tests.integration.core.test_event_log import apply_events

pytestmark = pytest.mark.django_db(transaction=True)

State = PromptGeneration.State


def test_an_abandoned_response_attempt_is_deleted_before_its_replacement_shows(chat, owner, clock):
    stale = session_snapshot(session=chat)

    generation = run_prompt(chat, owner, "/response-retry explain the outage", clock)

    assert generation.state == State.SUCCEEDED
    assert rows(chat) == [
        ("user", "/response-retry explain the outage"),
        ("assistant", "This is the replacement answer."),
    ]
    # A row is created with the first text the output redactor released (a final word may
    # follow in the next write), so rows are told apart by how their text begins.
    created_events = SessionEvent.objects.filter(session=chat, type="message.created")

    def created(text: str) -> int:
        (seq,) = [e.seq for e in created_events if text.startswith(e.payload["message"]["text"])]
        return seq

    deletions = list(SessionEvent.objects.filter(session=chat, type="message.deleted"))
    # One deletion for the repeated boundary: the second one had nothing new to take back.
    assert len(deletions) == 1
    assert len(deletions[0].payload["ids"]) == 2  # the abandoned thought and the draft
    assert created("Drafting a first attempt.") < deletions[0].seq
    assert created("This draft will be abandoned.") < deletions[0].seq
    assert deletions[0].seq < created("This is the replacement answer.")
    # A viewer that applies the pushed events converges on what a reload shows.
    fresh = session_snapshot(session=chat)
    caught_up = apply_events(stale, events_after(session=chat, after_seq=stale["last_seq"]))
    assert caught_up["messages"] == fresh["messages"]
    assert [m["text"] for m in fresh["messages"]] == [
        "/response-retry explain the outage",
        "This is the replacement answer.",
    ]


def test_a_boundary_never_takes_back_rows_of_an_earlier_prompt(chat, owner, clock):
    run_prompt(chat, owner, "first question", clock)
    before = rows(chat)

    run_prompt(chat, owner, "/response-retry second question", clock)

    assert rows(chat)[: len(before)] == before
    assert rows(chat)[len(before) :] == [
        ("user", "/response-retry second question"),
        ("assistant", "This is the replacement answer."),
    ]


def test_a_tool_call_is_one_row_revised_in_place_with_the_permission_decision(chat, owner, clock):
    generation = run_prompt(chat, owner, "/tool:edit change the config", clock)

    assert generation.state == State.SUCCEEDED
    tool = Message.objects.get(session=chat, role="tool_call")
    assert tool.status == "error"  # the edit was refused by the read-only policy
    assert tool.text == "Mock edit tool\nPermission was refused."
    assert tool.metadata == {
        "tool_call_id": "tool-edit-1",
        "name": "edit",
        "title": "Mock edit tool",
        "kind": "edit",
        "status": "failed",
        "output": "Permission was refused.",
        "permission": {"granted": False, "option_kind": "reject_once"},
        "source": "acp",
        # What the agent said the call touched and showed, kept for the tool card.
        "locations": [{"path": "/workspace/notes.md", "line": None}],
        "content": [{"type": "text", "text": "Permission was refused.", "omitted_bytes": 0}],
    }
    revisions = SessionEvent.objects.filter(
        session=chat, type="message.updated", payload__message__id=tool.pk
    )
    assert revisions.count() >= 2  # the permission, then the update


def test_the_agent_receives_the_prompt_with_credentials_redacted(chat, owner, clock, agent_state):
    run_prompt(chat, owner, "deploy with sk-ant-test-000 please", clock)

    received = [
        json.loads(line) for line in (agent_state / "prompts.jsonl").read_text().splitlines()
    ]
    assert received == ["deploy with [REDACTED] please"]


def test_a_zero_generation_never_authorises_an_automatic_retry(chat, owner, clock):
    generation = PromptGeneration.objects.create(session=chat, number=0)
    message_create(session=chat, generation=generation, role="user", text="/overloaded:1 hi")

    generation_run(generation_id=generation.pk, clock=clock)

    generation.refresh_from_db()
    assert generation.state == State.FAILED
    assert "could not be tied to this prompt" in generation.error_message
    assert event_kinds(chat, "notice.") == []


def test_stop_ends_a_streaming_answer_and_keeps_what_arrived(chat, owner, clock):
    generation = prompt_submit(
        session=chat, user=owner, text="/slow:150 one two three four five six seven eight"
    )

    def work() -> None:
        try:
            generation_run(generation_id=generation.pk, clock=clock)
        finally:
            connection.close()

    worker = threading.Thread(target=work)
    worker.start()
    eventually(
        Message.objects.filter(session=chat, role="assistant").exists,
        timeout=30,
        what="the answer starting",
    )
    session_stop(session=chat, user=owner)
    worker.join(30)

    generation.refresh_from_db()
    assert not worker.is_alive()
    assert generation.state == State.STOPPED
    answer = Message.objects.get(session=chat, role="assistant")
    assert answer.incomplete
    assert answer.text.startswith("Mock")
    assert not answer.text.endswith("eight")


def test_a_repeated_boundary_with_nothing_new_takes_nothing_back(chat, owner, clock):
    generation = prompt_submit(session=chat, user=owner, text="hello")
    turn = Turn(generation=generation, target=chat.target, clock=clock, rng=random.Random())

    for event in (
        AgentThought(text="First try."),
        AgentText(text="Draft."),
        ResponseAttemptBoundary(attempt=1),
        ResponseAttemptBoundary(attempt=2),
        AgentText(text="Kept."),
        AgentToolCall(id="t1", title="Read a file", kind="read", status="completed"),
        ResponseAttemptBoundary(attempt=3),  # the tool call committed everything before it
    ):
        turn.rows.apply(event)
    turn.writer.close()

    assert event_kinds(chat, "message.deleted") == ["message.deleted"]
    assert rows(chat) == [("user", "hello"), ("assistant", "Kept."), ("tool_call", "Read a file")]


def test_resuming_after_a_manual_failure_sends_only_the_persons_prompt_again(
    chat, owner, clock, agent_state
):
    failed = run_prompt(chat, owner, "/output-then-fail:1 write the report", clock)
    assert failed.state == State.FAILED

    resumed = session_recover(session=chat, user=owner, action="resume")
    generation_run(generation_id=resumed.pk, clock=clock)

    resumed.refresh_from_db()
    assert resumed.state == State.SUCCEEDED
    received = [
        json.loads(line) for line in (agent_state / "prompts.jsonl").read_text().split("\n") if line
    ]
    assert received == ["/output-then-fail:1 write the report"] * 2
    answers = Message.objects.filter(session=chat, role="assistant").order_by("id")
    assert [(m.text, m.incomplete) for m in answers] == [
        ("Here is the first part of the answer.", True),
        ("Mock agent reply to: write the report", False),
    ]
