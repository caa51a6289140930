"""Per-person caps: what one account may start, so that one person cannot fill the box.

- sessions opened in any 60 s (KANDEV_SESSIONS_PER_MINUTE);
- turns started in any 60 s (KANDEV_PROMPTS_PER_MINUTE): a new prompt, an edit, Regenerate,
  Resume and Start fresh each start one;
- prompts waiting to start at once (KANDEV_USER_MAX_QUEUED): queued generations, whatever they
  wait for.

The two rates are sliding windows kept in Redis (a sorted set of start times per person), so every
Daphne process counts the same starts; the time comes from an injected clock. A refused attempt
is not counted, so a person who keeps pressing Send is let in as soon as the window has room. The
queued count is read from Postgres under the person's advisory lock
(services/lifecycle/queued.py), the lock their claims and releases take too, so parallel
submissions cannot slip past it.

Redis being down fails open, as all shared state does (sessions_app/redis_state.py): the rate caps
then admit, and are back as soon as Redis is. The queued cap, in Postgres, still holds.

A refusal raises CapReached with the cap's name, its limit, when to try again and the sentence a
person reads; the services call these checks last, just before writing, inside their transaction.
"""

from __future__ import annotations

import math
import uuid

import redis
from django.conf import settings

from recovery.clock import Clock, SystemClock
from sessions_app.errors import CapReached
from sessions_app.models import PromptGeneration
from sessions_app.redis_state import fail_open, shared_key

WINDOW_S = 60.0
# When a person with KANDEV_USER_MAX_QUEUED prompts waiting may try again: their line moves when
# one of them starts, which nobody can promise, so this is only a polite polling interval.
QUEUED_RETRY_AFTER_S = 5.0
# The clock the rate windows read when a caller passes none (tests put a FakeClock here).
CLOCK: Clock = SystemClock()

# Drop the starts older than the window; refuse (returning when the oldest leaves it) when the
# window is full, else record this start. One script, so two processes never both take the last
# place.
_TAKE = """
local key, now, window, limit = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
if redis.call('ZCARD', key) >= limit then
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return {0, tostring(tonumber(oldest[2]) + window - now)}
end
redis.call('ZADD', key, now, ARGV[4])
redis.call('EXPIRE', key, math.ceil(window) + 1)
return {1, '0'}
"""


# The same question without recording anything: a refusal before any database work.
_PEEK = """
local key, now, window, limit = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local inside = redis.call('ZRANGEBYSCORE', key, '(' .. (now - window), '+inf', 'WITHSCORES')
if #inside / 2 >= limit then
  return tostring(tonumber(inside[2]) + window - now)
end
return false
"""


def _window_full(*, kind: str, user_id: int, limit: int, now: float) -> float | None:
    """None when the person's window has room, else the seconds until it has (nothing
    recorded)."""

    def peek(client: redis.Redis) -> float | None:
        wait = client.eval(_PEEK, 1, shared_key("caps", kind, str(user_id)), now, WINDOW_S, limit)
        return None if wait is None else max(float(wait), 0.0)

    return fail_open(f"caps.{kind}", peek, default=None)


def _window_take(*, kind: str, user_id: int, limit: int, now: float) -> float | None:
    """Record one start in the person's window; None when admitted, else the seconds until the
    oldest start leaves the window (nothing recorded)."""

    def take(client: redis.Redis) -> float | None:
        key = shared_key("caps", kind, str(user_id))
        admitted, wait = client.eval(_TAKE, 1, key, now, WINDOW_S, limit, uuid.uuid4().hex)
        return None if admitted else max(float(wait), 0.0)

    return fail_open(f"caps.{kind}", take, default=None)


def _retry_after_words(seconds: float) -> str:
    whole = max(1, math.ceil(seconds))
    return f"{whole} second{'s' if whole != 1 else ''}"


def session_rate_take(*, user_id: int | None, clock: Clock | None = None) -> None:
    """Count a session the person opens, or CapReached("session_rate") when they opened
    KANDEV_SESSIONS_PER_MINUTE in the last minute."""
    limit = settings.KANDEV_SESSIONS_PER_MINUTE
    if not limit or user_id is None:
        return
    wait = _window_take(kind="sessions", user_id=user_id, limit=limit, now=(clock or CLOCK).now())
    if wait is not None:
        raise CapReached(
            cap="session_rate",
            limit=limit,
            retry_after_s=wait,
            message=f"You have opened {limit} sessions in the last minute, the most allowed. "
            f"Try again in {_retry_after_words(wait)}.",
        )


def prompt_rate_take(*, user_id: int | None, clock: Clock | None = None) -> None:
    """Count a turn the person starts (prompt, edit, Regenerate, Resume, Start fresh), or
    CapReached("prompt_rate") when they started KANDEV_PROMPTS_PER_MINUTE in the last minute."""
    limit = settings.KANDEV_PROMPTS_PER_MINUTE
    if not limit or user_id is None:
        return
    wait = _window_take(kind="prompts", user_id=user_id, limit=limit, now=(clock or CLOCK).now())
    if wait is not None:
        raise _prompt_rate_reached(limit=limit, wait=wait)


def _prompt_rate_reached(*, limit: int, wait: float) -> CapReached:
    return CapReached(
        cap="prompt_rate",
        limit=limit,
        retry_after_s=wait,
        message=f"You have sent {limit} prompts in the last minute (edits, regenerates and "
        f"resumes count too), the most allowed. Try again in {_retry_after_words(wait)}.",
    )


def prompt_rate_precheck(*, user_id: int | None, clock: Clock | None = None) -> None:
    """CapReached("prompt_rate") at once when the person's minute is already full, before the
    request costs any database work (a flood's refusals are most of its requests); records
    nothing. ``prompt_rate_take`` still decides, inside the transaction."""
    limit = settings.KANDEV_PROMPTS_PER_MINUTE
    if not limit or user_id is None:
        return
    wait = _window_full(kind="prompts", user_id=user_id, limit=limit, now=(clock or CLOCK).now())
    if wait is not None:
        raise _prompt_rate_reached(limit=limit, wait=wait)


def queued_prompts_check(*, user_id: int | None) -> None:
    """CapReached("queued_prompts") when the person already has KANDEV_USER_MAX_QUEUED prompts
    waiting to start. The caller holds the person's lock (``queue.user_lock``) until it commits
    the new prompt, so two submissions cannot both take the last place."""
    limit = settings.KANDEV_USER_MAX_QUEUED
    if not limit or user_id is None:
        return
    queued = PromptGeneration.objects.filter(
        requested_by_id=user_id, state=PromptGeneration.State.QUEUED
    ).count()
    if queued >= limit:
        raise CapReached(
            cap="queued_prompts",
            limit=limit,
            retry_after_s=QUEUED_RETRY_AFTER_S,
            message=f"You already have {limit} prompts waiting to start, the most allowed. "
            "Send this one when one of them has started, or stop one.",
        )


def turn_start_check(*, user_id: int | None, clock: Clock | None = None) -> None:
    """Everything a new turn of the person must pass: their queued prompts, then their rate (last,
    since it counts the start). The caller holds the person's lock (``queue.user_lock``, taken
    after the session's row lock) and writes the turn in the same transaction."""
    queued_prompts_check(user_id=user_id)
    prompt_rate_take(user_id=user_id, clock=clock)
