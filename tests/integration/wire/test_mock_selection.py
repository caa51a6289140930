"""Choosing a scenario in a way real agents leave alone: a marker anywhere in the person's latest
text (reminder blocks around it ignored), the old leading command, or a control script."""

from __future__ import annotations

import anthropic
import httpx2
import pytest

from recovery.mock.scenario_request import answer_text
from recovery.mock.testing import MockProvider
from recovery.mock.wires import ANTHROPIC, GEMINI, OPENAI_CHAT, OPENAI_RESPONSES

from .mock_clients import WIRES, anthropic_client, raw_body, raw_post, run

REMINDER = (
    "<system-reminder>\nAs you answer, use the context. Today is 2026-12-01.\n</system-reminder>"
)


@pytest.mark.parametrize(
    "prompt",
    [
        "[[mock:overloaded:1]] please tell me a joke",
        "please [[mock:overloaded:1]] tell me a joke",
        "please tell me a joke [[mock:overloaded:1]]",
        "please tell me a joke [[mock overloaded:1]]",
        "/overloaded:1 please tell me a joke",
    ],
)
@pytest.mark.parametrize("wire", WIRES)
def test_a_marker_anywhere_or_a_leading_command_picks_the_scenario(
    mock_provider: MockProvider, wire: str, prompt: str
) -> None:
    failed = run(wire, mock_provider, prompt)
    answered = run(wire, mock_provider, prompt)

    assert not failed.finished
    assert answered.finished and answered.text == answer_text("please tell me a joke")
    assert [r["scenario"] for r in mock_provider.requests()] == ["overloaded:1"] * 2


def claude_shaped(*blocks: str) -> list[dict]:
    return [{"role": "user", "content": [{"type": "text", "text": b} for b in blocks]}]


def ask_claude_shaped(mock: MockProvider, messages: list[dict]) -> str:
    message = anthropic_client(mock).messages.create(
        model="claude-sonnet-4-6", max_tokens=64, messages=messages
    )
    return message.content[0].text


@pytest.mark.parametrize(
    "blocks",
    [
        (REMINDER, "[[mock:overloaded:1]] hi"),  # Claude Code: reminders first
        (REMINDER, "/overloaded:1 hi"),  # the old command survives them too
        (f"{REMINDER}\n[[mock:overloaded:1]] hi",),  # reminder and words in one block
        ("[[mock:overloaded:1]] hi", REMINDER),  # a reminder after the words
    ],
)
def test_system_reminders_around_the_persons_words_do_not_hide_the_scenario(
    mock_provider: MockProvider, blocks: tuple[str, ...]
) -> None:
    with pytest.raises(anthropic.InternalServerError) as failed:
        ask_claude_shaped(mock_provider, claude_shaped(*blocks))

    assert failed.value.status_code == 529
    assert ask_claude_shaped(mock_provider, claude_shaped(*blocks)) == answer_text("hi")


def test_a_marker_quoted_inside_a_reminder_is_not_the_persons(mock_provider: MockProvider) -> None:
    quoted = "<system-reminder>Earlier the user wrote [[mock:overloaded:9]].</system-reminder>"

    assert ask_claude_shaped(mock_provider, claude_shaped(quoted, "hi")) == answer_text("hi")


@pytest.mark.parametrize("stopped", ["[[mock:slow-stream:300]] hi", "/slow-stream:300 hi"])
def test_a_stopped_prompt_merged_into_the_next_turn_does_not_leak_its_scenario(
    mock_provider: MockProvider, stopped: str
) -> None:
    # After Stop, the app sends the unanswered prompt and the new one as one user turn.
    answer = ask_claude_shaped(mock_provider, claude_shaped(stopped, "what next"))

    assert answer == answer_text("what next")
    assert mock_provider.requests()[0]["scenario"] == "plain"


def test_a_leading_slash_that_names_no_scenario_is_ordinary_text(
    mock_provider: MockProvider,
) -> None:
    answer = ask_claude_shaped(mock_provider, claude_shaped("/etc/hosts is what?"))

    assert answer == answer_text("/etc/hosts is what?")


# How each wire says "your request is wrong": (HTTP status, where the message is, shape check)
def refusal_message(wire: str, response: httpx2.Response) -> str:
    body = response.json()
    if wire == ANTHROPIC:
        assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    elif wire in (OPENAI_CHAT, OPENAI_RESPONSES):
        assert body["error"]["type"] == "invalid_request_error"
    else:
        assert (body["error"]["code"], body["error"]["status"]) == (400, "INVALID_ARGUMENT")
    assert response.status_code == 400
    return body["error"]["message"]


@pytest.mark.parametrize("wire", WIRES)
def test_a_marker_naming_no_scenario_is_refused_and_says_which_exist(
    mock_provider: MockProvider, wire: str
) -> None:
    response = raw_post(mock_provider, wire, json=raw_body(wire, "[[mock:overloded:2]] hi"))

    message = refusal_message(wire, response)
    assert "unknown mock scenario 'overloded'" in message and "overloaded" in message


# ---- scripts set through the control endpoint --------------------------------------------------


def test_a_script_for_one_conversation_applies_there_only(mock_provider: MockProvider) -> None:
    mock_provider.script("overloaded:1", conversation="session-a")

    scripted = run(ANTHROPIC, mock_provider, "hi", conversation="session-a")
    other = run(ANTHROPIC, mock_provider, "hi", conversation="session-b")
    again = run(ANTHROPIC, mock_provider, "hi", conversation="session-a")

    assert scripted.error is not None and scripted.error.status_code == 529
    assert other.finished and again.finished and again.text == answer_text("hi")


@pytest.mark.parametrize("spelling", ["overloaded:9", "/overloaded:9", "[[mock:overloaded:9]]"])
def test_a_script_takes_every_spelling_of_a_scenario(
    mock_provider: MockProvider, spelling: str
) -> None:
    mock_provider.script(spelling, wire=GEMINI)

    assert run(GEMINI, mock_provider, "hi").error is not None
    assert run(ANTHROPIC, mock_provider, "hi").finished  # another wire: untouched
    assert mock_provider.requests()[0]["scenario"] == "overloaded:9"


def test_the_newest_matching_script_wins_and_clearing_ends_them(
    mock_provider: MockProvider,
) -> None:
    mock_provider.script("overloaded:9")
    mock_provider.script("server-error:9", conversation="session-a")

    assert run(ANTHROPIC, mock_provider, "hi", conversation="session-a").error.status_code == 500
    assert run(ANTHROPIC, mock_provider, "hi", conversation="session-b").error.status_code == 529
    mock_provider.scripts_clear(conversation="session-a")
    assert run(ANTHROPIC, mock_provider, "hi", conversation="session-a").error.status_code == 529
    mock_provider.scripts_clear()
    assert run(ANTHROPIC, mock_provider, "hi", conversation="session-a").finished


def test_a_script_keeps_the_persons_words_as_the_prompt(mock_provider: MockProvider) -> None:
    mock_provider.script("plain", conversation="session-a")

    seen = run(
        OPENAI_RESPONSES, mock_provider, "[[mock:overloaded:3]] hi", conversation="session-a"
    )

    assert seen.finished and seen.text == answer_text("hi")


@pytest.mark.parametrize(
    ("payload", "complaint"),
    [
        ({"scenario": "overloded"}, "unknown mock scenario 'overloded'"),
        ({"scenario": "overloaded", "session": "x"}, "unknown fields ['session']"),
        ({"scenario": "overloaded", "wire": "bedrock"}, "unknown wire 'bedrock'"),
        ({"scenario": "overloaded", "model": 5}, "with string values"),
        ({"model": "mock-1"}, "expected {scenario"),
        (["overloaded"], "expected {scenario"),
    ],
)
def test_a_script_the_mock_cannot_honour_is_refused(
    mock_provider: MockProvider, payload: object, complaint: str
) -> None:
    response = httpx2.post(f"{mock_provider.url}/_mock/script", json=payload)

    assert response.status_code == 400 and complaint in response.json()["error"]
    assert httpx2.get(f"{mock_provider.url}/_mock/script").json()["scripts"] == []
