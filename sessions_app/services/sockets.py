"""Live sockets follow their login, and one person's sockets are capped.

Every socket of a signed-in person (a session page's, a board's) joins two channel-layer groups
when it opens, before it reads anything: its login's (``login_group_name``, from a hash of the
Django session key, never the key itself) and its person's (``user_sockets_group_name``). Then:

- A login session that ends (logout, its row deleted from the admin or the shell, ``clearsessions``,
  a key cycled by a password change) sends ``login.ended`` to its login's group: those sockets
  close with 4410 at once, in every Daphne process.
- A person who changes (made inactive, new password, deleted) gets ``login.recheck`` in their
  person's group: every one of their sockets checks its own login again (``login_is_current``)
  and closes with 4410 if it no longer holds. Their other logins stay open when they still hold.
- A login that ends with no signal at all (a session expiring, a row deleted by raw SQL) is caught
  by each socket's own re-check every KANDEV_WS_LOGIN_CHECK_S, and by the re-check that every
  snapshot, resume and catch-up does before it reads.

The cap: each open socket is an entry (its channel name) in a sorted set per person in Redis,
scored by the wall-clock time of its last heartbeat (the same periodic re-check). Taking a place
drops the entries not refreshed for ``hold_ttl_s()`` first (a process that died without closing
its sockets), then counts, in one Lua script, so two processes can't both take the last place.
Redis being away fails open (the socket is admitted), as all shared state does
(``sessions_app.redis_state``); the channel layer needs that Redis too, so little works then anyway.

Channel-layer messages (what consumers receive, through ``sessions_app.socket_login``):
  {"type": "login.ended"}     to login_group_name(session key)
  {"type": "login.recheck"}   to user_sockets_group_name(user id)
"""

from __future__ import annotations

import hashlib
from importlib import import_module

import redis
from django.conf import settings
from django.contrib.auth import (
    BACKEND_SESSION_KEY,
    HASH_SESSION_KEY,
    SESSION_KEY,
    get_user_model,
    load_backend,
)
from django.db import transaction
from django.utils.crypto import constant_time_compare

from sessions_app.push import login_push
from sessions_app.redis_state import fail_open, shared_key

LOGIN_ENDED = "login.ended"
LOGIN_RECHECK = "login.recheck"
# Heartbeats an entry may miss before it stops counting: one late heartbeat (a busy process, a
# slow Redis) must not free a place that is still taken.
HOLD_TTL_BEATS = 3

# KEYS[1]: the person's set. ARGV: now, stale before, cap, this socket, key ttl (whole seconds).
_HOLD = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[2])
if redis.call('ZSCORE', KEYS[1], ARGV[4]) == false
    and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
"""


def login_group_name(session_key: str) -> str:
    digest = hashlib.sha256(f"kandev-login:{session_key}".encode()).hexdigest()[:40]
    return f"login-{digest}"


def user_sockets_group_name(user_id: int) -> str:
    return f"login-user-{user_id}"


def login_sockets_close(*, session_key: str) -> None:
    """Close every socket of this login session, in every process, once the change that ended
    it is committed (a rolled-back deletion ended nothing)."""
    group = login_group_name(session_key)
    transaction.on_commit(lambda: login_push(group=group, message={"type": LOGIN_ENDED}))


def user_sockets_recheck(*, user_id: int) -> None:
    """Have every socket of this person check its login again, after the change commits."""
    group = user_sockets_group_name(user_id)
    transaction.on_commit(lambda: login_push(group=group, message={"type": LOGIN_RECHECK}))


def login_is_current(*, session_key: str | None, user_id: int) -> bool:
    """Does the login session ``session_key`` still sign in ``user_id``? The same judgement as
    ``django.contrib.auth.get_user``: the session exists and has not expired, names this user and
    a configured backend, that backend still returns the user (an inactive one it does not), and
    the session's auth hash matches the user's current password (or a SECRET_KEY_FALLBACKS one,
    which the next page load rotates). Unlike get_user it changes nothing: only a read."""
    if not session_key:
        return False
    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key=session_key)
    data = store.load()
    try:
        session_user_id = get_user_model()._meta.pk.to_python(data[SESSION_KEY])
        backend_path = data[BACKEND_SESSION_KEY]
    except KeyError:
        return False
    if session_user_id != user_id or backend_path not in settings.AUTHENTICATION_BACKENDS:
        return False
    user = load_backend(backend_path).get_user(session_user_id)
    if user is None:
        return False
    if not hasattr(user, "get_session_auth_hash"):
        return True
    session_hash = data.get(HASH_SESSION_KEY)
    if not session_hash:
        return False
    return constant_time_compare(session_hash, user.get_session_auth_hash()) or any(
        constant_time_compare(session_hash, fallback)
        for fallback in user.get_session_auth_fallback_hash()
    )


def hold_ttl_s() -> float:
    """How long an entry counts without a heartbeat."""
    return HOLD_TTL_BEATS * settings.KANDEV_WS_LOGIN_CHECK_S


def _sockets_key(user_id: int) -> str:
    return shared_key("sockets", str(user_id))


def socket_hold(*, user_id: int, socket_id: str, now: float) -> bool:
    """Take one of the person's KANDEV_WS_MAX_PER_USER places for ``socket_id``; False when
    they are all taken by live sockets. ``now``: wall-clock seconds (every process's scores must
    compare)."""
    cap = settings.KANDEV_WS_MAX_PER_USER
    if cap == 0:
        return True
    ttl = hold_ttl_s()

    def hold(client: redis.Redis) -> bool:
        script = client.register_script(_HOLD)
        keys = [_sockets_key(user_id)]
        args = [now, now - ttl, cap, socket_id, int(ttl) + 1]
        return bool(script(keys=keys, args=args))

    return fail_open("socket count (hold)", hold, default=True)


def socket_refresh(*, user_id: int, socket_id: str, now: float) -> None:
    """The heartbeat of an open socket: its entry counts for another ``hold_ttl_s()``."""
    if settings.KANDEV_WS_MAX_PER_USER == 0:
        return
    key = _sockets_key(user_id)

    def refresh(client: redis.Redis) -> None:
        client.pipeline(transaction=False).zadd(key, {socket_id: now}).expire(
            key, int(hold_ttl_s()) + 1
        ).execute()

    fail_open("socket count (refresh)", refresh, default=None)


def socket_release(*, user_id: int, socket_id: str) -> None:
    """Give the place back when the socket closes (a crashed process's expire instead)."""
    fail_open(
        "socket count (release)",
        lambda client: client.zrem(_sockets_key(user_id), socket_id),
        default=None,
    )
