"""The services' URLs (DATABASE_URL, REDIS_URL, KANDEV_BROKER_URL) read into what each client
wants: Django's DATABASES entry, one Redis location spelled for each Redis client, Celery's
broker. A URL of another kind stops start-up with a message naming its variable."""

from __future__ import annotations

from urllib.parse import parse_qs, unquote, urlparse

from django.core.exceptions import ImproperlyConfigured

from kandev_web.env import env_positive, env_str, env_whole

BROKER_SCHEMES = ("redis", "rediss", "redis+socket", "amqp", "amqps", "pyamqp")
RABBITMQ_SCHEMES = ("amqp", "amqps", "pyamqp")


def database_from_url(url: str) -> dict:
    """postgresql://user:pass@host:port/name, or ?host=/socket/dir for a unix socket."""
    parsed = urlparse(url)
    if parsed.scheme not in ("postgres", "postgresql"):
        raise ImproperlyConfigured(
            f"DATABASE_URL must be a postgresql:// URL, got {parsed.scheme!r}"
        )
    query = parse_qs(parsed.query)
    host = query.get("host", [parsed.hostname or ""])[0]
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parsed.path.lstrip("/")) or "postgres",
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": host,
        "PORT": str(parsed.port or ""),
        "CONN_MAX_AGE": 0,
        "OPTIONS": database_pool_options(),
        "TEST": {"NAME": env_str("KANDEV_TEST_DB_NAME", "test_kandev")},
    }


def database_pool_options() -> dict:
    """Each process keeps at most KANDEV_DB_POOL_MAX connections (psycopg's pool, through
    Django's ``pool`` option); a thread that needs one while all are lent waits up to
    KANDEV_DB_POOL_TIMEOUT seconds. A worker runs many turns on threads, and a turn lends its
    connection back whenever it waits for the provider (sessions_app/db_connections.py), so a
    handful serve hundreds of turns. KANDEV_DB_POOL_MAX=0 turns pooling off (one connection per
    thread)."""
    most = env_whole("KANDEV_DB_POOL_MAX", 16)
    if most == 0:
        return {}
    timeout = env_positive("KANDEV_DB_POOL_TIMEOUT", 30.0)
    return {"pool": {"min_size": min(2, most), "max_size": most, "timeout": timeout}}


def redis_urls(url: str) -> dict[str, str]:
    """Spell one Redis location for each client: redis-py, Celery's broker, channels-redis."""
    parsed = urlparse(url)
    if parsed.scheme == "unix":
        socket_path = parsed.path
        db = parse_qs(parsed.query).get("db", ["0"])[0]
        return {
            "client": f"unix://{socket_path}?db={db}",
            "celery": f"redis+socket://{socket_path}?virtual_host={db}",
            "channels": f"unix://{socket_path}?db={db}",
        }
    if parsed.scheme not in ("redis", "rediss"):
        raise ImproperlyConfigured(f"REDIS_URL must be redis://, rediss:// or unix://, got {url!r}")
    return {"client": url, "celery": url, "channels": url}


def broker_url(raw: str | None, *, redis_default: str) -> str:
    """The Celery broker: Redis (the default, `make run`'s embedded one) or RabbitMQ."""
    url = raw or redis_default
    scheme = urlparse(url).scheme
    if scheme not in BROKER_SCHEMES:
        raise ImproperlyConfigured(
            f"KANDEV_BROKER_URL must be a redis:// or amqp:// URL (RabbitMQ), got scheme {scheme!r}"
        )
    return url


def is_rabbitmq(url: str) -> bool:
    return urlparse(url).scheme in RABBITMQ_SCHEMES
