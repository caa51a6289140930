"""The mock provider's time-boxed incident, driven by the official SDKs over real HTTP.

The server's monotonic clock is injected, so an incident "lasts 30 s" without anyone waiting.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import anthropic
import httpx2
import openai
import pytest

from recovery.classify import classify
from recovery.guard import CancelToken, open_stream
from recovery.mock.testing import (
    FAKE_ANTHROPIC_KEY,
    FAKE_OPENAI_KEY,
    MockProvider,
    running_mock_server,
)
from recovery.taxonomy import Code, Klass, ProviderFailure

from .conftest import user_call


class ServerClock:
    """The server's monotonic clock, moved by the test (the server reads it on its own thread)."""

    def __init__(self) -> None:
        self._now = 1000.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds


@pytest.fixture
def server_clock() -> ServerClock:
    return ServerClock()


@pytest.fixture
def mock(server_clock: ServerClock) -> Iterator[MockProvider]:
    with running_mock_server(monotonic=server_clock) as url:
        yield MockProvider(url)


def ask_anthropic(mock: MockProvider, text: str) -> str:
    client = anthropic.Anthropic(api_key=FAKE_ANTHROPIC_KEY, base_url=mock.url, max_retries=0)
    message = client.messages.create(
        model="mock-1", max_tokens=64, messages=[{"role": "user", "content": text}]
    )
    return "".join(block.text for block in message.content if block.type == "text")


def test_an_incident_overloads_every_request_until_its_time_is_up(mock, server_clock):
    started = mock.incident_start(seconds=30)
    assert started["active"] and started["incident"]["remaining_s"] == 30.0

    for prompt in ("hi", "what is the weather", "/rate-limited:1 hello"):
        with pytest.raises(anthropic.InternalServerError) as failed:
            ask_anthropic(mock, prompt)
        assert failed.value.status_code == 529
        assert failed.value.body["error"]["type"] == "overloaded_error"

    server_clock.advance(29.9)
    with pytest.raises(anthropic.InternalServerError):
        ask_anthropic(mock, "hi")
    server_clock.advance(0.1)

    assert ask_anthropic(mock, "hi")
    state = mock.incident()
    assert not state["active"]
    assert (state["incident"]["failed"], state["incident"]["elapsed_s"]) == (4, 30.0)


def test_the_request_log_marks_each_request_the_incident_failed(mock):
    mock.incident_start(seconds=5)
    with pytest.raises(anthropic.InternalServerError):
        ask_anthropic(mock, "first")
    mock.incident_end()
    ask_anthropic(mock, "second")

    first, second = mock.requests()
    assert (first["status"], first["incident"]) == (529, 1)
    assert first["conversation"] and first["model"] == "mock-1"
    assert second["status"] == 200 and "incident" not in second


def test_a_request_failed_by_an_incident_keeps_its_scenario_attempts(mock, server_clock):
    mock.incident_start(seconds=10)
    with pytest.raises(anthropic.InternalServerError):
        ask_anthropic(mock, "/server-error:1 tell me a joke")
    server_clock.advance(10)

    # The scenario's one scripted failure is still to come: the incident did not use it up.
    with pytest.raises(anthropic.InternalServerError) as scripted:
        ask_anthropic(mock, "/server-error:1 tell me a joke")
    assert scripted.value.status_code == 500
    assert ask_anthropic(mock, "/server-error:1 tell me a joke")


def test_ending_an_incident_early_brings_the_provider_back_at_once(mock):
    mock.incident_start(seconds=600)
    ended = mock.incident_end()

    assert not ended["active"] and ended["incident"]["ended_early"]
    assert ask_anthropic(mock, "hi")


def test_a_reset_ends_the_incident_and_forgets_it(mock):
    mock.incident_start(seconds=600)
    mock.reset()

    assert mock.incident() == {"active": False, "incident": None, "history": []}
    assert ask_anthropic(mock, "hi")


def test_a_throttling_incident_speaks_the_openai_wire_with_its_retry_after(mock):
    mock.incident_start(seconds=30, status=429, retry_after=7)
    client = openai.OpenAI(api_key=FAKE_OPENAI_KEY, base_url=f"{mock.url}/v1", max_retries=0)

    with pytest.raises(openai.RateLimitError) as failed:
        client.chat.completions.create(model="mock-1", messages=[{"role": "user", "content": "hi"}])

    assert failed.value.response.headers["retry-after"] == "7"
    assert failed.value.code == "rate_limit_exceeded"


def test_the_recovery_engine_reads_an_incident_as_a_transient_overload(mock):
    mock.incident_start(seconds=30)
    stream = open_stream(mock.target("anthropic"), user_call("hi"), cancel=CancelToken())

    with pytest.raises(ProviderFailure) as failed:
        list(stream)

    classification = classify(failed.value.evidence)
    assert classification.code is Code.PROVIDER_OVERLOADED
    assert classification.klass is Klass.TRANSIENT


@pytest.mark.parametrize(
    "body",
    [
        {"seconds": 0},
        {"seconds": -1},
        {"seconds": "30"},
        {"seconds": True},
        {"seconds": 30, "status": 404},
        {"seconds": 30, "retry_after": 1.5},
        {"status": 529},
        ["seconds", 30],
    ],
)
def test_it_refuses_an_incident_it_cannot_honour(mock, body):
    response = httpx2.post(f"{mock.url}/_mock/incident", json=body)

    assert response.status_code == 400
    assert mock.incident()["active"] is False


def test_an_incident_speaks_the_responses_wire_as_codex_reads_it(mock):
    mock.incident_start(seconds=30, status=529)
    client = openai.OpenAI(api_key=FAKE_OPENAI_KEY, base_url=f"{mock.url}/v1", max_retries=0)

    with pytest.raises(openai.InternalServerError) as failed:
        client.responses.create(model="gpt-5.4", input="hi", stream=True)

    assert failed.value.status_code == 529
    assert failed.value.body["message"] == "The server is overloaded or not ready yet."
    (logged,) = mock.requests()
    assert (logged["wire"], logged["incident"]) == ("openai-responses", 1)
