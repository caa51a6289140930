"""A fake ACP agent that replays one fixture's frames: `python -m recovery.mock.acp_replay FILE`.

It answers the handshake from the fixture's identity, then, on ``session/prompt``, writes the
recorded frames verbatim (the prompt's response gets the request's id). ``delivery: batched``
writes them all in one write, so the diagnostic and the terminal error arrive together, as they
do when the agent flushes both at once; ``paced`` writes and flushes frame by frame. Nothing
here reads a clock: replay is deterministic.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

_OUT = sys.stdout.fileno()


def _write(messages: list[dict[str, Any]]) -> None:
    data = b"".join(json.dumps(message).encode("utf-8") + b"\n" for message in messages)
    while data:
        data = data[os.write(_OUT, data) :]


def _answer(request: dict[str, Any], fixture: dict[str, Any]) -> None:
    method, request_id = request.get("method"), request.get("id")
    if method == "initialize":
        result = {
            "protocolVersion": 1,
            "agentInfo": {"name": fixture["agent"], "version": "replay"},
        }
        _write([{"jsonrpc": "2.0", "id": request_id, "result": result}])
    elif method == "session/new":
        result = {"sessionId": fixture["session_id"]}
        _write([{"jsonrpc": "2.0", "id": request_id, "result": result}])
    elif method == "session/prompt":
        frames = [dict(frame) for frame in fixture["frames"]]
        frames[-1]["id"] = request_id
        if fixture["delivery"] == "batched":
            _write(frames)
        else:
            for frame in frames:
                _write([frame])
    elif request_id is not None:
        error = {"code": -32601, "message": "Method not found"}
        _write([{"jsonrpc": "2.0", "id": request_id, "error": error}])


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    fixture = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    for line in sys.stdin.buffer:
        if line.strip():
            _answer(json.loads(line), fixture)


if __name__ == "__main__":
    main()
