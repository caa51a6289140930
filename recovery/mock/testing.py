"""Run the mock provider in-process for tests and benchmarks: a real server on a free port."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from aiohttp import web

from recovery.mock.server import build_app


@contextmanager
def running_mock_server(host: str = "127.0.0.1") -> Iterator[str]:
    """Start the server on its own event loop in a daemon thread; yield its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    stopped = threading.Event()
    runner = web.AppRunner(build_app(), handle_signals=False, shutdown_timeout=1.0)
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
