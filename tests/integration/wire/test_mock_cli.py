"""`python -m recovery.mock --port N` serves the same app as the in-process fixture."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2

ROOT = Path(__file__).resolve().parents[3]


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
        deadline = time.monotonic() + 10
        while True:
            try:
                health = httpx2.get(f"http://127.0.0.1:{port}/_mock/health", timeout=0.5)
                break
            except httpx2.TransportError:
                assert time.monotonic() < deadline, "the mock server did not start"
                time.sleep(0.05)
        assert health.json() == {"ok": True}
        refused = httpx2.post(f"http://127.0.0.1:{port}/v1/chat/completions", json={"messages": []})
        assert refused.status_code == 401
    finally:
        server.terminate()
        server.wait(5)
