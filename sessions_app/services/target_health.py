"""Provider health in Redis: every worker's view of each target's circuit and retry budget.

The rules are ``recovery.circuit``'s; this module stores them. Each change is an optimistic Redis
transaction (WATCH the target's hash, compute the next value, MULTI/EXEC, again on a conflict), so
two workers deciding at once can never both become the half-open probe. Redis being down fails
open: every call is admitted, failures and successes are not recorded, and the turn goes on as if
the target were healthy (``sessions_app.redis_state``).

Loops that wait because of the target (held by the circuit, a shared Retry-After or the retry
budget) are remembered in a set per target, so the probe's success can release exactly them.
"""

from __future__ import annotations

from collections.abc import Callable

import redis
from django.conf import settings

from recovery.circuit import (
    ALLOWED,
    Admission,
    TargetHealth,
    Transition,
    admit,
    record_failure,
    record_success,
)
from sessions_app.redis_state import fail_open, shared_key

# A target's state outlives any incident it describes; an idle target's hash expires.
HEALTH_TTL_S = 24 * 3600
MAX_CONFLICTS = 50


def health_key(target_name: str) -> str:
    return shared_key("health", target_name)


def held_key(target_name: str) -> str:
    return shared_key("health", target_name, "held")


def health_admit(*, target_name: str, now: float, retry: bool) -> Admission:
    """May a call to ``target_name`` start now (``retry``: an automatic retry of a turn)?"""

    def change(health: TargetHealth) -> tuple[TargetHealth, Admission]:
        return admit(health, settings=settings.KANDEV_HEALTH, now=now, retry=retry)

    return _update(target_name, change, default=ALLOWED, purpose="provider health (admit)")


def health_failure(
    *, target_name: str, now: float, code: str, retry_after_s: float = 0.0, by: str = ""
) -> Transition | None:
    """A call by ``by`` (a session's id) failed with ``code``; its Retry-After holds everyone."""

    def change(health: TargetHealth) -> tuple[TargetHealth, Transition | None]:
        return record_failure(
            health,
            settings=settings.KANDEV_HEALTH,
            now=now,
            code=code,
            retry_after_s=retry_after_s,
            by=by,
        )

    return _update(target_name, change, default=None, purpose="provider health (failure)")


def health_success(*, target_name: str, now: float) -> Transition | None:
    def change(health: TargetHealth) -> tuple[TargetHealth, Transition | None]:
        return record_success(health, settings=settings.KANDEV_HEALTH, now=now)

    return _update(target_name, change, default=None, purpose="provider health (success)")


def health_read(*, target_name: str) -> TargetHealth:
    return fail_open(
        "provider health (read)",
        lambda client: TargetHealth.from_dict(client.hgetall(health_key(target_name))),
        default=TargetHealth(),
    )


def health_all() -> dict[str, TargetHealth]:
    """Every target with a recorded health, by name (for /metrics)."""

    def read(client: redis.Redis) -> dict[str, TargetHealth]:
        prefix = health_key("")
        found = {}
        for key in client.scan_iter(match=f"{prefix}*", count=200):
            name = key[len(prefix) :]
            if name.endswith(":held"):
                continue
            found[name] = TargetHealth.from_dict(client.hgetall(key))
        return found

    return fail_open("provider health (scan)", read, default={})


def held_add(*, target_name: str, loop_id: int) -> None:
    def add(client: redis.Redis) -> None:
        key = held_key(target_name)
        client.pipeline().sadd(key, loop_id).expire(key, HEALTH_TTL_S).execute()

    fail_open("provider health (hold)", add, default=None)


def held_take(*, target_name: str) -> list[int]:
    """The loops waiting on the target, forgotten as they are handed out."""

    def take(client: redis.Redis) -> list[int]:
        key = held_key(target_name)
        members, _ = client.pipeline().smembers(key).delete(key).execute()
        return sorted(int(member) for member in members)

    return fail_open("provider health (release)", take, default=[])


def _update[T](
    target_name: str,
    change: Callable[[TargetHealth], tuple[TargetHealth, T]],
    *,
    default: T,
    purpose: str,
) -> T:
    key = health_key(target_name)

    def transact(client: redis.Redis) -> T:
        with client.pipeline() as pipe:
            for _ in range(MAX_CONFLICTS):
                try:
                    pipe.watch(key)
                    before = TargetHealth.from_dict(pipe.hgetall(key))
                    after, result = change(before)
                    pipe.multi()
                    if after != before:
                        pipe.hset(key, mapping=after.to_dict())
                    pipe.expire(key, HEALTH_TTL_S)
                    pipe.execute()
                    return result
                except redis.WatchError:
                    continue
        raise redis.RedisError(f"{key} changed under {MAX_CONFLICTS} transactions in a row")

    return fail_open(purpose, transact, default=default)
