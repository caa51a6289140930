"""Scenario counters per conversation: a retry continues the script, a new session plays it again,
and two sessions never share a counter once they are named (URL prefix or header)."""

from __future__ import annotations

import anthropic
import httpx2
import pytest

from recovery.mock.scenario_request import answer_text
from recovery.mock.testing import MockProvider
from recovery.mock.wires import ANTHROPIC, GEMINI, OPENAI_RESPONSES

from .mock_clients import WIRES, anthropic_client, raw_body, raw_post, run

README_EXAMPLE = "[[mock:overloaded:2]] tell me a joke"


def outcomes(runs) -> list[str]:
    return ["answer" if r.finished else "failed" for r in runs]


@pytest.mark.parametrize("wire", WIRES)
def test_the_readme_example_works_in_every_new_session(
    mock_provider: MockProvider, wire: str
) -> None:
    first_session = [run(wire, mock_provider, README_EXAMPLE) for _ in range(3)]
    second_session = [run(wire, mock_provider, README_EXAMPLE) for _ in range(3)]

    assert outcomes(first_session) == outcomes(second_session) == ["failed", "failed", "answer"]
    assert first_session[2].text == answer_text("tell me a joke")
    assert [r["attempt"] for r in mock_provider.requests()] == [1, 2, 3, 1, 2, 3]


def test_named_conversations_count_apart_even_with_the_same_first_message(
    mock_provider: MockProvider,
) -> None:
    seen = {"a": [], "b": []}
    for _ in range(3):
        for name in ("a", "b"):  # interleaved, as two sessions' retries would be
            seen[name].append(run(ANTHROPIC, mock_provider, README_EXAMPLE, conversation=name))

    assert outcomes(seen["a"]) == outcomes(seen["b"]) == ["failed", "failed", "answer"]
    assert {r["conversation_source"] for r in mock_provider.requests()} == {"header"}


def test_unnamed_conversations_with_the_same_first_message_share_a_counter(
    mock_provider: MockProvider,
) -> None:
    # Why the app and the launchers should name their conversations (see the report/docstring).
    first = run(ANTHROPIC, mock_provider, README_EXAMPLE)
    other_session = run(ANTHROPIC, mock_provider, README_EXAMPLE)
    third = run(ANTHROPIC, mock_provider, README_EXAMPLE)

    assert outcomes([first, other_session, third]) == ["failed", "failed", "answer"]


@pytest.mark.parametrize("wire", WIRES)
def test_a_conversation_in_the_base_url_reaches_every_sdk(
    mock_provider: MockProvider, wire: str
) -> None:
    base_url = mock_provider.base_url(wire, conversation="session 7/β")
    mock_provider.script("overloaded:1", conversation="session 7/β")

    failed = run(wire, mock_provider, "hi", base_url=base_url)
    answered = run(wire, mock_provider, "hi", base_url=base_url)
    elsewhere = run(wire, mock_provider, "hi")

    assert outcomes([failed, answered, elsewhere]) == ["failed", "answer", "answer"]
    named = mock_provider.requests(conversation="session 7/β")
    assert [(r["conversation_source"], r["attempt"]) for r in named] == [("path", 1), ("path", 2)]


def test_derived_conversations_are_per_wire_and_named_ones_span_wires(
    mock_provider: MockProvider,
) -> None:
    run(ANTHROPIC, mock_provider, README_EXAMPLE)
    run(GEMINI, mock_provider, README_EXAMPLE)  # same words, another wire: its own first attempt
    run(ANTHROPIC, mock_provider, README_EXAMPLE, conversation="session-9")
    run(OPENAI_RESPONSES, mock_provider, README_EXAMPLE, conversation="session-9")

    attempts = [(r["wire"], r["attempt"]) for r in mock_provider.requests()]
    assert attempts == [(ANTHROPIC, 1), (GEMINI, 1), (ANTHROPIC, 1), (OPENAI_RESPONSES, 2)]
    assert mock_provider.count(wire=ANTHROPIC) == 2
    assert mock_provider.count(conversation="session-9") == 2


def test_a_model_call_after_a_tool_result_starts_its_own_count(
    mock_provider: MockProvider,
) -> None:
    client = anthropic_client(mock_provider)
    prompt = [{"role": "user", "content": "[[mock:tool-complete-fail:1]] note this"}]
    with pytest.raises(anthropic.APIStatusError):
        client.messages.create(model="mock-1", max_tokens=64, messages=prompt)
    call = client.messages.create(model="mock-1", max_tokens=64, messages=prompt)
    tool_use = next(block for block in call.content if block.type == "tool_use")
    history = [
        *prompt,
        {"role": "assistant", "content": [block.model_dump() for block in call.content]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool_use.id, "content": "noted"}
        ]},
    ]  # fmt: skip

    answer = client.messages.create(model="mock-1", max_tokens=64, messages=history)

    assert "The tool returned: noted" in answer.content[0].text
    assert [(r["attempt"], r["tool_results"]) for r in mock_provider.requests()] == [
        (1, 0),
        (2, 0),
        (1, 1),
    ]


def test_a_stopped_slow_answer_leaves_the_next_turn_alone(mock_provider: MockProvider) -> None:
    slow = "[[mock:slow-first-byte:3000:1]] write the report"
    impatient = anthropic.Anthropic(
        api_key="sk-ant-test-000", base_url=mock_provider.url, max_retries=0, timeout=0.3
    )
    with pytest.raises(anthropic.APITimeoutError):  # the person pressed Stop
        impatient.messages.create(
            model="mock-1",
            max_tokens=64,
            messages=[{"role": "user", "content": slow}],
            extra_headers={"X-Mock-Conversation": "session-s"},
        )
    mock_provider.wait_for(lambda seen: seen and seen[0]["disconnected"])

    next_turn = anthropic_client(mock_provider).messages.create(
        model="mock-1",
        max_tokens=64,
        messages=[{"role": "user", "content": [
            {"type": "text", "text": slow}, {"type": "text", "text": "now the summary"}
        ]}],
        extra_headers={"X-Mock-Conversation": "session-s"},
    )  # fmt: skip

    assert next_turn.content[0].text == answer_text("now the summary")
    stopped, answered = mock_provider.requests()
    assert stopped["disconnected"] and answered["scenario"] == "plain"


def test_the_conversations_endpoint_shows_scripts_still_playing(
    mock_provider: MockProvider,
) -> None:
    run(ANTHROPIC, mock_provider, README_EXAMPLE, conversation="session-c")
    playing = mock_provider.conversations()["session-c"]
    run(ANTHROPIC, mock_provider, README_EXAMPLE, conversation="session-c")
    run(ANTHROPIC, mock_provider, README_EXAMPLE, conversation="session-c")
    played = mock_provider.conversations()["session-c"]

    assert playing == {
        "source": "header",
        "requests": 1,
        "wires": [ANTHROPIC],
        "attempts": {"overloaded:2": 1},
    }
    assert played == {"source": "header", "requests": 3, "wires": [ANTHROPIC]}


@pytest.mark.parametrize("wire", WIRES)
def test_a_conversation_id_the_mock_cannot_use_is_refused(
    mock_provider: MockProvider, wire: str
) -> None:
    response = raw_post(
        mock_provider,
        wire,
        json=raw_body(wire, "hi"),
        headers={"X-Mock-Conversation": "x" * 201},
    )

    assert response.status_code == 400
    assert "conversation id is 1 to 200 characters" in response.text


def test_a_reset_forgets_every_conversation(mock_provider: MockProvider) -> None:
    run(ANTHROPIC, mock_provider, README_EXAMPLE, conversation="session-r")
    mock_provider.reset()

    assert mock_provider.conversations() == {}
    assert not run(ANTHROPIC, mock_provider, README_EXAMPLE, conversation="session-r").finished
    assert httpx2.get(f"{mock_provider.url}/_mock/requests").json()["count"] == 1
