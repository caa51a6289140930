"""Run the mock provider in-process for tests and benchmarks: a real server on a free port."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import quote

import httpx2
from aiohttp import web

from recovery.clock import FakeClock
from recovery.mock.conversations import CONVERSATION_HEADER
from recovery.mock.server import build_app
from recovery.mock.state import credential_fingerprint
from recovery.mock.wires import OPENAI_CHAT, OPENAI_RESPONSES
from recovery.providers import TargetConfig

FAKE_ANTHROPIC_KEY = "sk-ant-test-000"
# Shaped like a real project key: the redactor judges values by shape, and a real key is long.
FAKE_OPENAI_KEY = "sk-proj-T3stK3yN0tR3alQw8Er7Ty6Ui5Op4As3Df2Gh1"
FAKE_GEMINI_KEY = "AIzaSy-test-000"
__all__ = [
    "CONVERSATION_HEADER",
    "FAKE_ANTHROPIC_KEY",
    "FAKE_GEMINI_KEY",
    "FAKE_OPENAI_KEY",
    "MockProvider",
    "SplitClock",
    "running_mock_server",
]


@contextmanager
def running_mock_server(
    host: str = "127.0.0.1", *, monotonic: Callable[[], float] = time.monotonic
) -> Iterator[str]:
    """Start the server on its own event loop in a daemon thread; yield its base URL.
    ``monotonic`` is the server's clock for incidents (a fake one lets tests skip the wait)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    stopped = threading.Event()
    runner = web.AppRunner(
        build_app(monotonic=monotonic), handle_signals=False, shutdown_timeout=1.0
    )
    failure: list[BaseException] = []

    def serve() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(runner.setup())
            loop.run_until_complete(web.SockSite(runner, sock).start())
        except OSError as error:  # surfaced to the caller below, not swallowed
            failure.append(error)
            ready.set()
            return
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()
        stopped.set()

    thread = threading.Thread(target=serve, name=f"mock-provider-{port}", daemon=True)
    thread.start()
    ready.wait(10)
    if failure:
        raise failure[0]
    try:
        yield f"http://{host}:{port}"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        stopped.wait(5)
        thread.join(5)
        sock.close()


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

    def base_url(self, wire: str, *, conversation: str | None = None) -> str:
        """The base URL an SDK (or an agent's config) takes for ``wire``; with ``conversation``,
        every request through it belongs to that conversation (no header needed)."""
        root = self.url
        if conversation is not None:
            root = f"{root}/conversations/{quote(conversation, safe='')}"
        return f"{root}/v1" if wire in (OPENAI_CHAT, OPENAI_RESPONSES) else root

    @staticmethod
    def fingerprint(secret: str) -> str:
        """How the request log spells a credential header's value (it never holds the key)."""
        return credential_fingerprint(secret)

    def requests(self, *, wire: str | None = None, conversation: str | None = None) -> list[dict]:
        """The request log, oldest first; narrowed to one wire and/or one conversation."""
        query = {k: v for k, v in (("wire", wire), ("conversation", conversation)) if v}
        return httpx2.get(f"{self.url}/_mock/requests", params=query).json()["requests"]

    def model_calls(self, **narrowed: str) -> list[dict]:
        """Requests that asked for an answer (a Gemini countTokens is not one)."""
        return [r for r in self.requests(**narrowed) if r.get("operation") != "count_tokens"]

    def count(self, **narrowed: str) -> int:
        """Model calls seen, optionally for one wire and/or conversation."""
        return len(self.model_calls(**narrowed))

    def conversations(self) -> dict[str, dict]:
        """Per conversation: its source, request count, wires, and attempts still counting."""
        return httpx2.get(f"{self.url}/_mock/conversations").json()["conversations"]

    def reset(self) -> None:
        httpx2.post(f"{self.url}/_mock/reset").raise_for_status()

    def script(self, scenario: str, **match: str) -> None:
        """Force ``scenario`` on requests matching ``conversation``, ``wire``, ``model``,
        ``path``."""
        httpx2.post(
            f"{self.url}/_mock/script", json={"scenario": scenario, **match}
        ).raise_for_status()

    def scripts_clear(self, *, conversation: str | None = None) -> None:
        params = {"conversation": conversation} if conversation else {}
        httpx2.delete(f"{self.url}/_mock/script", params=params).raise_for_status()

    def redirect(self, location: str, *, status: int = 307) -> None:
        """Answer every model request with a redirect to ``location`` until redirect_end()."""
        httpx2.post(
            f"{self.url}/_mock/redirect", json={"location": location, "status": status}
        ).raise_for_status()

    def redirect_end(self) -> None:
        httpx2.delete(f"{self.url}/_mock/redirect").raise_for_status()

    def incident_start(
        self, *, seconds: float, status: int = 529, retry_after: int | None = None
    ) -> dict:
        """Fail every model request for ``seconds`` of the server's clock; returns its state."""
        body: dict = {"seconds": seconds, "status": status}
        if retry_after is not None:
            body["retry_after"] = retry_after
        response = httpx2.post(f"{self.url}/_mock/incident", json=body)
        response.raise_for_status()
        return response.json()

    def incident(self) -> dict:
        return httpx2.get(f"{self.url}/_mock/incident").json()

    def incident_end(self) -> dict:
        response = httpx2.delete(f"{self.url}/_mock/incident")
        response.raise_for_status()
        return response.json()

    def wait_for(
        self, predicate: Callable[[list[dict]], bool], *, timeout_s: float = 2.0
    ) -> list[dict]:
        """Poll the request log until ``predicate(requests)`` holds (the server works async)."""
        deadline = time.monotonic() + timeout_s
        while True:
            seen = self.requests()
            if predicate(seen) or time.monotonic() > deadline:
                return seen
            time.sleep(0.01)


class SplitClock:
    """Fake wall clock (budgets, backoff: advanced by the injected sleep) over real monotonic
    time (guard timeouts, which tests set to fractions of a second)."""

    def __init__(self) -> None:
        self.wall = FakeClock()

    def now(self) -> float:
        return self.wall.now()

    def monotonic(self) -> float:
        return time.monotonic()
