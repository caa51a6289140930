"""The only way out of a confined agent's network: one unix socket per allowed endpoint.

A confined agent runs in a network namespace of its own, where nothing but its own loopback
exists: it cannot reach this machine's PostgreSQL, Redis, broker or web server, nor any other
host. For each endpoint its launcher allows (the provider's host and port), the worker listens on
a unix socket that is bound into the sandbox; a forwarder inside (sandbox_entry.sh) turns the
agent's loopback connections into connections to that socket, and here each one is joined to a
fresh TCP connection to the allowed endpoint. Bytes pass through untouched (TLS stays end to end
between the agent and its provider); the agent never chooses where a connection goes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

logger = logging.getLogger(__name__)

_CHUNK = 64 * 1024
_CONNECT_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class EgressRoute:
    socket_path: str  # on the worker's side; bound into the sandbox
    host: str  # where every connection through this socket goes
    port: int


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(_CHUNK):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            if writer.can_write_eof():
                writer.write_eof()


async def _join(
    route: EgressRoute, inner_reader: asyncio.StreamReader, inner_writer: asyncio.StreamWriter
) -> None:
    try:
        outer_reader, outer_writer = await asyncio.wait_for(
            asyncio.open_connection(route.host, route.port), _CONNECT_TIMEOUT_S
        )
    except (OSError, TimeoutError) as error:
        # The agent sees a reset connection, as it would for a provider that is down.
        logger.info("agent egress to %s:%s failed: %s", route.host, route.port, error)
        inner_writer.close()
        return
    try:
        await asyncio.gather(_pipe(inner_reader, outer_writer), _pipe(outer_reader, inner_writer))
    finally:
        for writer in (outer_writer, inner_writer):
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


@asynccontextmanager
async def egress_bridges(routes: Sequence[EgressRoute]) -> AsyncIterator[None]:
    """Listen on each route's socket for as long as the block runs; close everything after."""
    servers: list[asyncio.AbstractServer] = []
    joins: set[asyncio.Task] = set()

    def accept(
        route: EgressRoute,
    ) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], None]:
        def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.ensure_future(_join(route, reader, writer))
            joins.add(task)
            task.add_done_callback(joins.discard)

        return handle

    try:
        for route in routes:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(route.socket_path)  # a socket left by a killed worker
            server = await asyncio.start_unix_server(accept(route), path=route.socket_path)
            servers.append(server)
        yield
    finally:
        for listening in servers:
            listening.close()
        for task in list(joins):
            task.cancel()
        for task in list(joins):
            with contextlib.suppress(BaseException):
                await task
        for route in routes:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(route.socket_path)
