"""State every process must share (provider health, metrics), kept in Redis.

One client per Redis URL, with short time limits: Redis being slow or down must never stall a
turn. Callers wrap each use in ``fail_open``: a Redis error is logged (once per minute per
purpose, so a long outage does not flood the log) and the caller goes on as if nothing were
known, which for provider health means "admit the call" and for metrics "drop the sample".
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

SOCKET_TIMEOUT_S = 0.5
WARN_EVERY_S = 60.0

_clients: dict[str, redis.Redis] = {}
_warned_at: dict[str, float] = {}
_lock = threading.Lock()


def shared_client() -> redis.Redis:
    url = settings.REDIS["client"]
    with _lock:
        client = _clients.get(url)
        if client is None:
            client = redis.Redis.from_url(
                url,
                socket_timeout=SOCKET_TIMEOUT_S,
                socket_connect_timeout=SOCKET_TIMEOUT_S,
                retry_on_timeout=False,
                decode_responses=True,
            )
            _clients[url] = client
    return client


def shared_key(*parts: str) -> str:
    """A key in this deployment's namespace (KANDEV_REDIS_PREFIX)."""
    return ":".join((settings.KANDEV_REDIS_PREFIX, *parts))


def fail_open[T](purpose: str, use: Callable[[redis.Redis], T], *, default: T) -> T:
    """``use(client)``, or ``default`` when Redis fails (logged, at most once a minute)."""
    try:
        return use(shared_client())
    except redis.RedisError as error:
        now = time.monotonic()
        if now - _warned_at.get(purpose, -WARN_EVERY_S) >= WARN_EVERY_S:
            _warned_at[purpose] = now
            logger.warning(
                "shared state unavailable for %s (%s); going on without it",
                purpose,
                type(error).__name__,
            )
        return default
