"""The mock provider fixture and small helpers for the wire tests (no database needed)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx2
import pytest

from recovery.clock import FakeClock
from recovery.events import ModelCall, TextPart, Turn
from recovery.mock.testing import running_mock_server
from recovery.providers import TargetConfig

FAKE_ANTHROPIC_KEY = "sk-ant-test-000"
FAKE_OPENAI_KEY = "sk-test-000"


@dataclass(frozen=True, slots=True)
class MockProvider:
    url: str

    def target(self, wire: str, *, model: str = "mock-1", name: str = "") -> TargetConfig:
        if wire == "openai":
            return TargetConfig(
                "openai", f"{self.url}/v1", model, FAKE_OPENAI_KEY, name or f"openai-{model}"
            )
        return TargetConfig(
            "anthropic", self.url, model, FAKE_ANTHROPIC_KEY, name or f"anthropic-{model}"
        )

    def requests(self) -> list[dict]:
        return httpx2.get(f"{self.url}/_mock/requests").json()["requests"]

    def count(self) -> int:
        return len(self.requests())

    def reset(self) -> None:
        httpx2.post(f"{self.url}/_mock/reset").raise_for_status()

    def script(self, scenario: str, **match: str) -> None:
        httpx2.post(
            f"{self.url}/_mock/script", json={"scenario": scenario, **match}
        ).raise_for_status()

    def wait_for(self, predicate, *, timeout_s: float = 2.0) -> list[dict]:
        """Poll the request log until ``predicate(requests)`` holds (the server works async)."""
        deadline = time.monotonic() + timeout_s
        while True:
            seen = self.requests()
            if predicate(seen) or time.monotonic() > deadline:
                return seen
            time.sleep(0.01)


@pytest.fixture(scope="session")
def _mock_server_url() -> Iterator[str]:
    with running_mock_server() as url:
        yield url


@pytest.fixture
def mock_provider(_mock_server_url: str) -> MockProvider:
    provider = MockProvider(_mock_server_url)
    provider.reset()
    return provider


def user_call(text: str, **kwargs) -> ModelCall:
    return ModelCall(model="mock-1", turns=(Turn("user", (TextPart(text),)),), **kwargs)


class SplitClock:
    """Fake wall clock (budgets, backoff: advanced by the injected sleep) over real monotonic
    time (guard timeouts, which tests set to fractions of a second)."""

    def __init__(self) -> None:
        self.wall = FakeClock()

    def now(self) -> float:
        return self.wall.now()

    def monotonic(self) -> float:
        return time.monotonic()


class RecordingSleep:
    """An injected sleep that never sleeps: it records the wait and moves the fake clock."""

    def __init__(self, clock: SplitClock | FakeClock) -> None:
        self.clock = clock
        self.waits: list[float] = []

    def __call__(self, seconds: float, cancel) -> None:
        self.waits.append(seconds)
        wall = self.clock.wall if isinstance(self.clock, SplitClock) else self.clock
        wall.advance(seconds)
