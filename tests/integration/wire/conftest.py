"""Small helpers for the wire tests (no database needed). The mock provider fixture lives in
tests/conftest.py; MockProvider and SplitClock in recovery.mock.testing."""

from __future__ import annotations

from recovery.clock import FakeClock
from recovery.mock.testing import (  # noqa: F401  (re-exported for the wire tests)
    FAKE_ANTHROPIC_KEY,
    FAKE_OPENAI_KEY,
    MockProvider,
    SplitClock,
)
from recovery.model_call import ConversationTurn, ModelCall, TextPart


def user_call(text: str, **kwargs) -> ModelCall:
    return ModelCall(model="mock-1", turns=(ConversationTurn("user", (TextPart(text),)),), **kwargs)


class RecordingSleep:
    """An injected sleep that never sleeps: it records the wait and moves the fake clock."""

    def __init__(self, clock: SplitClock | FakeClock) -> None:
        self.clock = clock
        self.waits: list[float] = []

    def __call__(self, seconds: float, cancel) -> None:
        self.waits.append(seconds)
        wall = self.clock.wall if isinstance(self.clock, SplitClock) else self.clock
        wall.advance(seconds)
