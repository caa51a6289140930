"""Database connections on a worker that runs many turns on threads.

Django gives each thread its own connection and keeps it until ``close()``; with the pool
(settings ``KANDEV_DB_POOL_MAX``) closing lends it back. A turn spends nearly all its time waiting
for the provider or the agent, so it lends its connection back before every wait: a few pooled
connections then serve hundreds of turns, and the pool's size bounds what one process ever opens.
Without the pool, closing would mean reconnecting for the next query, so nothing is released.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from django.db import connection


def pooled() -> bool:
    return bool(connection.settings_dict.get("OPTIONS", {}).get("pool"))


def connection_release() -> None:
    """Lend this thread's connection back to the pool, unless a transaction still needs it."""
    if connection.connection is not None and not connection.in_atomic_block and pooled():
        connection.close()


def released_between[Item](items: Iterable[Item]) -> Iterator[Item]:
    """``items``, with this thread's connection lent back before waiting for each next one."""
    iterator = iter(items)
    try:
        while True:
            connection_release()
            try:
                item = next(iterator)
            except StopIteration:
                return
            yield item
    finally:
        # Leaving early (Stop, an outcome) ends the source at once, as a plain for loop would.
        close = getattr(iterator, "close", None)
        if close is not None:
            close()
