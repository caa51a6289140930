"""What an ACP agent is told about the conversation so far (rows built in memory, no database)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sessions_app.agent.acp_context import (
    CONTEXT_HEADER,
    OLDER_LEFT_OUT,
    AcpPromptText,
    acp_prompt_text,
)
from sessions_app.models import Message


def row(role: str, text: str, *, incomplete: bool = False, status: str = "complete") -> Message:
    return Message(role=role, text=text, incomplete=incomplete, status=status)


def test_a_first_prompt_is_sent_alone_without_a_context_block():
    assert acp_prompt_text(messages=[row("user", "hello")]) == AcpPromptText(
        context=None, prompt="hello"
    )


def test_there_is_nothing_to_send_without_a_user_prompt():
    assert acp_prompt_text(messages=[row("assistant", "orphan answer")]) is None


def test_a_follow_up_carries_earlier_prompts_and_complete_answers_oldest_first():
    text = acp_prompt_text(
        messages=[
            row("user", "remember the word heliotrope"),
            row("thinking", "the person wants me to remember a word"),
            row("assistant", "I will remember heliotrope."),
            row("user", "what was the word?"),
        ]
    )

    assert text.prompt == "what was the word?"
    assert text.context == "\n\n".join(
        [
            CONTEXT_HEADER,
            "User: remember the word heliotrope",
            "Assistant: I will remember heliotrope.",
        ]
    )


def test_partial_output_streaming_rows_and_tool_rows_never_become_context():
    text = acp_prompt_text(
        messages=[
            row("user", "first"),
            row("assistant", "half an answer", incomplete=True),
            row("assistant", "still streaming", status="streaming"),
            row("tool_call", "Mock read tool"),
            row("assistant", "an answer that failed", status="error"),
            row("user", "second"),
        ]
    )

    assert text.context == f"{CONTEXT_HEADER}\n\nUser: first"


def test_rows_after_the_latest_prompt_are_its_own_earlier_attempt_and_not_context():
    # A resumed prompt: the first attempt's answer is complete-looking but follows the prompt.
    text = acp_prompt_text(
        messages=[row("user", "only question"), row("assistant", "first attempt's answer")]
    )

    assert text == AcpPromptText(context=None, prompt="only question")


def test_credentials_are_redacted_in_the_context_and_the_prompt():
    text = acp_prompt_text(
        messages=[
            row("user", "use sk-ant-test-000 for the deploy"),
            row("assistant", "Deploying with sk-ant-test-000 now."),
            row("user", "and again with sk-ant-test-000"),
        ]
    )

    assert "sk-ant-test-000" not in text.context
    assert "sk-ant-test-000" not in text.prompt
    assert "User: use [REDACTED] for the deploy" in text.context
    assert text.prompt == "and again with [REDACTED]"


def test_older_turns_are_left_out_first_and_the_block_says_so():
    messages = [row("user", f"turn {n} " + "x" * 300) for n in range(10)]
    messages.append(row("user", "latest"))

    text = acp_prompt_text(messages=messages, limit_bytes=1024)

    assert len(text.context.encode()) <= 1024
    assert OLDER_LEFT_OUT in text.context
    assert "turn 9 " in text.context  # the most recent earlier turn survives
    assert "turn 0 " not in text.context
    kept = [n for n in range(10) if f"turn {n} " in text.context]
    assert kept == list(range(kept[0], 10))  # a contiguous recent tail, in order


def test_a_single_newest_turn_too_long_for_the_bound_is_cut_rather_than_dropped():
    text = acp_prompt_text(
        messages=[row("user", "y" * 5000), row("user", "latest")], limit_bytes=1024
    )

    assert len(text.context.encode()) <= 1024
    assert "User: yyy" in text.context
    assert OLDER_LEFT_OUT not in text.context


def test_nothing_is_said_about_left_out_turns_when_everything_fits():
    text = acp_prompt_text(messages=[row("user", "a"), row("assistant", "b"), row("user", "c")])

    assert OLDER_LEFT_OUT not in text.context


@given(
    texts=st.lists(st.text(min_size=1, max_size=400), min_size=1, max_size=30),
    limit=st.integers(min_value=400, max_value=4096),
)
def test_the_context_block_never_exceeds_its_bound(texts, limit):
    messages = [row("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)]
    messages.append(row("user", "latest"))

    text = acp_prompt_text(messages=messages, limit_bytes=limit)

    assert text.context is None or len(text.context.encode()) <= limit
