"""`python -m recovery.mock --port N` serves the same app as the in-process fixture."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import httpx2

from devtools.eventually import eventually

ROOT = Path(__file__).resolve().parents[3]


def mock_health(port: int) -> httpx2.Response | None:
    """The mock's health answer, or None while nothing listens on the port yet."""
    try:
        return httpx2.get(f"http://127.0.0.1:{port}/_mock/health", timeout=0.5)
    except httpx2.TransportError:
        return None


def test_the_mock_server_runs_as_a_module_on_the_given_port() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "recovery.mock", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        health = eventually(
            lambda: mock_health(port),
            until=lambda response: response is not None,
            timeout=10,
            what="the mock server answering",
        )
        assert health.json() == {"ok": True}
        refused = httpx2.post(f"http://127.0.0.1:{port}/v1/chat/completions", json={"messages": []})
        assert refused.status_code == 401
    finally:
        server.terminate()
        server.wait(5)
