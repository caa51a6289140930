"""Starting a process from its spec: ready when its spec says so, gone with its group after."""

from __future__ import annotations

import http.server
import os
import sys
import threading
from collections.abc import Iterator

import pytest

from devtools import processes
from devtools.processes import ProcessSpec
from devtools.testbed import free_port

from .conftest import is_gone


def test_a_running_mock_answers_until_its_block_ends(tmp_path):
    spec = processes.mock(port=free_port())
    with processes.running(spec, env=os.environ, log_path=tmp_path / "mock.log") as process:
        assert processes.answers(spec.ready_url)
    assert is_gone(process.pid)
    assert not processes.answers(spec.ready_url)


def test_a_process_that_exits_while_starting_fails_at_once_with_its_output(tmp_path):
    broken = ProcessSpec(
        "broken", (sys.executable, "-c", "print('no settings'); raise SystemExit(4)"),
        ready_line=" ready.",
    )  # fmt: skip

    with pytest.raises(
        RuntimeError, match=r"broken exited with code 4 while starting:\nno settings"
    ):
        with processes.running(broken, env=os.environ, log_path=tmp_path / "broken.log"):
            pass


class Answers(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(int(self.path.strip("/")))
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def answering_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_client_error_is_an_answer_and_a_server_error_is_not(answering_server):
    assert processes.answers(f"{answering_server}/200")
    assert processes.answers(f"{answering_server}/404")
    assert not processes.answers(f"{answering_server}/500")
    assert not processes.answers(f"{answering_server}/503")
