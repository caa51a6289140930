"""The Chat Completions request body built from our turns."""

from __future__ import annotations

from recovery.model_call import ConversationTurn, ModelCall, TextPart
from recovery.providers.openai_compat import openai_request


def test_two_prompts_in_one_user_turn_stay_two_paragraphs():
    # The first prompt was stopped before any answer, so the next one joins the same user turn.
    call = ModelCall(
        model="m", turns=(ConversationTurn(role="user", parts=(TextPart("hi"), TextPart("next"))),)
    )

    messages = openai_request(call, model="m")["messages"]

    assert messages[-1] == {"role": "user", "content": "hi\n\nnext"}


def test_one_prompt_is_sent_as_it_was_written():
    call = ModelCall(model="m", turns=(ConversationTurn(role="user", parts=(TextPart("hello"),)),))

    assert openai_request(call, model="m")["messages"][-1] == {"role": "user", "content": "hello"}
