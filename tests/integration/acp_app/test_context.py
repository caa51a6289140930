"""A follow-up prompt to an ACP agent sees the earlier conversation, although every attempt is a
fresh agent process: the real mock agent's /recall answers from the context block it was given."""

from __future__ import annotations

import pytest

from sessions_app.agent.runner import generation_run
from sessions_app.models import Message, PromptGeneration
from sessions_app.services.prompts import session_recover
from tests.integration.acp_app.conftest import prompts_received, run_prompt

pytestmark = pytest.mark.django_db(transaction=True)

State = PromptGeneration.State


def last_answer(chat) -> str:
    return Message.objects.filter(session=chat, role="assistant").order_by("-id").first().text


def test_a_follow_up_prompt_sees_the_earlier_turn(chat, owner, clock, agent_state):
    run_prompt(chat, owner, "remember the word heliotrope", clock)

    generation = run_prompt(chat, owner, "/recall", clock)

    assert generation.state == State.SUCCEEDED
    assert last_answer(chat) == (
        "You said before: remember the word heliotrope. "
        "I last answered: Mock agent reply to: remember the word heliotrope"
    )
    # The prompt itself still reaches the agent as its own final block.
    assert prompts_received(agent_state) == ["remember the word heliotrope", "/recall"]


def test_the_first_prompt_of_a_session_comes_with_no_earlier_conversation(chat, owner, clock):
    run_prompt(chat, owner, "/recall", clock)

    assert last_answer(chat) == "You said before: nothing. I have not answered before."


def test_after_start_fresh_the_earlier_word_is_gone(chat, owner, clock):
    run_prompt(chat, owner, "remember the word heliotrope", clock)
    run_prompt(chat, owner, "/recall", clock)
    assert "heliotrope" in last_answer(chat)

    fresh = session_recover(session=chat, user=owner, action="fresh")
    generation_run(generation_id=fresh.pk, clock=clock)

    fresh.refresh_from_db()
    assert fresh.state == State.SUCCEEDED
    assert last_answer(chat) == "You said before: nothing. I have not answered before."


def test_an_incomplete_partial_answer_is_not_part_of_the_context(chat, owner, clock):
    failed = run_prompt(chat, owner, "/output-then-fail remember the word marigold", clock)
    assert failed.state == State.FAILED
    partial = Message.objects.get(session=chat, role="assistant")
    assert (partial.text, partial.incomplete) == ("Here is the first part of the answer.", True)

    run_prompt(chat, owner, "/recall", clock)

    answer = last_answer(chat)
    assert answer == (
        "You said before: /output-then-fail remember the word marigold. I have not answered before."
    )
    assert "first part" not in answer


def test_earlier_credentials_reach_the_agent_redacted(chat, owner, clock):
    run_prompt(chat, owner, "deploy with sk-ant-test-000 please", clock)

    run_prompt(chat, owner, "/recall", clock)

    answer = last_answer(chat)
    assert "sk-ant-test-000" not in answer
    assert answer.startswith("You said before: deploy with [REDACTED] please.")
