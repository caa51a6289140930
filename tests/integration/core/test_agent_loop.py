"""The agent loop end to end: real mock provider over HTTP, the real SDK, real Postgres."""

from __future__ import annotations

import json
import threading
import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from devtools.eventually import eventually
from recovery.guard import open_stream as provider_open_stream
from sessions_app import event_types as ev
from sessions_app.agent import coalescer
from sessions_app.agent.runner import generation_run
from sessions_app.models import (
    Message,
    Note,
    PromptGeneration,
    ProviderTarget,
    Session,
    SessionEvent,
)
from sessions_app.services import prompt_submit, session_stop
from tests.support.factories import ProviderTargetFactory, SessionFactory

pytestmark = pytest.mark.django_db(transaction=True)


def submit(session: Session, user, text: str) -> PromptGeneration:
    return prompt_submit(session=session, user=user, text=text)


def rows(session: Session) -> list[tuple[str, str, bool]]:
    return [
        (m.role, m.status, m.incomplete)
        for m in Message.objects.filter(session=session).order_by("id")
    ]


def test_a_plain_answer_streams_and_persists(chat, owner, mock_provider):
    generation = submit(chat, owner, "tell me about tides")
    generation_run(generation_id=generation.pk)

    generation.refresh_from_db()
    chat.refresh_from_db()
    assert generation.state == PromptGeneration.State.SUCCEEDED
    assert chat.state == Session.State.IDLE
    assert rows(chat) == [("user", "complete", False), ("assistant", "complete", False)]
    answer = Message.objects.get(session=chat, role="assistant")
    assert answer.text.startswith("You asked about tell me about tides.")
    types = list(SessionEvent.objects.filter(session=chat).values_list("type", flat=True))
    assert types[-3:] == [ev.MESSAGE_UPDATED, ev.GENERATION_UPDATED, ev.SESSION_UPDATED]
    assert len(mock_provider.requests()) == 1


def test_a_redelivered_run_reaches_the_provider_once(chat, owner, mock_provider):
    generation = submit(chat, owner, "hello")
    barrier = threading.Barrier(2)
    results: list[object] = []

    def deliver() -> None:
        barrier.wait()
        try:
            results.append(generation_run(generation_id=generation.pk))
        finally:
            connection.close()

    workers = [threading.Thread(target=deliver) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)

    assert sorted(r is None for r in results) == [False, True]
    assert len(mock_provider.requests()) == 1
    assert Message.objects.filter(session=chat, role="assistant").count() == 1


def message_updates(captured: CaptureQueriesContext) -> int:
    return sum(
        1 for q in captured.captured_queries if q["sql"].startswith('UPDATE "sessions_app_message"')
    )


@pytest.mark.parametrize("scenario", ["/slow-stream:40", "/long:3000"])
def test_coalescing_bounds_database_writes_per_message(
    chat, owner, mock_provider, scenario, settings
):
    settings.KANDEV_STREAM_FLUSH_INTERVAL = 0.1
    generation = submit(chat, owner, f"{scenario} stream this")
    with CaptureQueriesContext(connection) as captured:
        generation_run(generation_id=generation.pk)

    answer = Message.objects.get(session=chat, role="assistant")
    streaming_s = (answer.updated_at - answer.created_at).total_seconds()
    deltas = len(answer.text.split(" "))
    assert answer.status == "complete" and deltas > 10
    assert message_updates(captured) <= streaming_s / 0.1 + 1
    assert message_updates(captured) < deltas  # never a write per token


def test_a_tool_runs_once_even_when_the_run_is_redelivered(chat, owner, mock_provider):
    generation = submit(chat, owner, '/tool append_note {"text": "buy milk"} please')
    generation_run(generation_id=generation.pk)
    assert generation_run(generation_id=generation.pk) is None

    assert list(Note.objects.filter(session=chat).values_list("text", flat=True)) == ["buy milk"]
    assert [r[0] for r in rows(chat)] == [
        "user",
        "assistant",
        "tool_call",
        "tool_result",
        "assistant",
    ]
    call = Message.objects.get(session=chat, role="tool_call")
    result = Message.objects.get(session=chat, role="tool_result")
    assert call.metadata["name"] == "append_note"
    assert result.metadata["tool_call_id"] == call.metadata["tool_call_id"]
    final = Message.objects.filter(session=chat, role="assistant").last()
    assert final.text.startswith("The tool returned: Saved note #")
    assert len(mock_provider.requests()) == 2
    generation.refresh_from_db()
    assert generation.state == PromptGeneration.State.SUCCEEDED


def test_stop_ends_the_run_promptly_and_keeps_partial_text_incomplete(chat, owner, mock_provider):
    generation = submit(chat, owner, "/slow-stream:150 a long story")
    worker = threading.Thread(
        target=lambda: (generation_run(generation_id=generation.pk), connection.close())
    )
    worker.start()
    eventually(
        Message.objects.filter(session=chat, role="assistant").exists,
        timeout=10,
        interval=0.02,
        what="the answer starting",
    )
    stopped_at = time.monotonic()
    session_stop(session=chat, user=owner)
    worker.join(10)
    took = time.monotonic() - stopped_at

    assert not worker.is_alive() and took < 1.0
    generation.refresh_from_db()
    chat.refresh_from_db()
    assert generation.state == PromptGeneration.State.STOPPED
    assert chat.state == Session.State.IDLE
    answer = Message.objects.get(session=chat, role="assistant")
    assert answer.incomplete and answer.text
    assert "deterministically" not in answer.text  # the full answer never arrived


def test_a_provider_failure_needs_attention_with_an_honest_redacted_message(
    owner, mock_provider, monkeypatch
):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-000")
    target = ProviderTargetFactory(
        name="Claude via mock",
        kind=ProviderTarget.Kind.ANTHROPIC,
        model="claude-test",
        base_url=mock_provider.url,
        api_key_env="ANTHROPIC_API_KEY",
    )
    chat = SessionFactory(owner=owner, target=target, title="Busy")
    generation = submit(chat, owner, "/overloaded-after-text:1 hello")
    generation_run(generation_id=generation.pk)

    generation.refresh_from_db()
    chat.refresh_from_db()
    assert generation.state == PromptGeneration.State.FAILED
    assert generation.error_code == "provider_overloaded"
    assert generation.error_message.startswith(
        "Provider overloaded after part of the answer was shown."
    )
    assert chat.state == Session.State.NEEDS_ATTENTION
    assert chat.task.status == "needs_attention"
    partial = Message.objects.get(session=chat, role="assistant")
    assert (partial.status, partial.incomplete) == ("error", True) and partial.text
    stored = json.dumps(list(SessionEvent.objects.filter(session=chat).values("payload")))
    assert "sk-ant-test-000" not in stored + generation.error_message
    assert len(mock_provider.requests()) == 1  # text was shown: never replayed


def test_a_missing_key_fails_without_calling_the_provider(
    owner, mock_provider, monkeypatch, caplog
):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    target = ProviderTargetFactory(
        name="No key",
        kind=ProviderTarget.Kind.OPENAI,
        model="gpt-test",
        base_url=f"{mock_provider.url}/v1",
        api_key_env="OPENAI_API_KEY",
    )
    chat = SessionFactory(owner=owner, target=target, title="Keyless")
    generation = submit(chat, owner, "hello")
    generation_run(generation_id=generation.pk)

    generation.refresh_from_db()
    assert generation.error_code == "missing_credentials"
    # The card is the user's: it says what to do, never which variable; the log tells staff.
    assert "OPENAI_API_KEY" not in generation.error_message
    assert "operator" in generation.error_message
    assert "OPENAI_API_KEY is not set on this worker" in caplog.text
    assert mock_provider.requests() == []


def test_a_tool_call_whose_turn_failed_is_never_run_and_is_sealed_next_time(
    chat, owner, mock_provider
):
    generation = submit(chat, owner, "/tool-complete-fail:1 note it")
    generation_run(generation_id=generation.pk)

    generation.refresh_from_db()
    assert generation.state == PromptGeneration.State.FAILED
    assert Message.objects.filter(session=chat, role="tool_call").count() == 1
    assert not Note.objects.exists()

    follow_up = submit(chat, owner, "are you still there?")
    generation_run(generation_id=follow_up.pk)
    follow_up.refresh_from_db()
    assert follow_up.state == PromptGeneration.State.SUCCEEDED
    assert not Note.objects.exists()  # the sealed call was not run by the later turn either
    sent = mock_provider.requests()[-1]
    assert len(mock_provider.requests()) == 2 and sent["scenario"] == "plain"


def test_a_write_that_fails_mid_answer_closes_the_provider_response_and_fails_the_turn(
    chat, owner, mock_provider, monkeypatch
):
    """The Turn writes and the driver streams: when a write fails, the Turn closes the driver,
    and the driver closes the provider response it holds, at once."""
    closed: list[str] = []

    def open_stream(config, call, **kwargs):
        def events():
            try:
                yield from provider_open_stream(config, call, **kwargs)
            finally:
                closed.append(call.model)

        return events()

    def create_fails(**kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(coalescer, "message_create", create_fails)
    generation = submit(chat, owner, "/slow-stream:50 a long story")
    with pytest.raises(RuntimeError):
        generation_run(generation_id=generation.pk, open_stream=open_stream)

    generation.refresh_from_db()
    assert len(closed) == 1
    assert generation.state == PromptGeneration.State.FAILED
    assert generation.error_code == "unclassified"
    assert [r[0] for r in rows(chat)] == ["user"]
