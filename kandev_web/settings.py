"""One flat settings module. Everything comes from the environment, read by tiny typed helpers
that fail loudly on bad values.

DATABASE_URL and REDIS_URL name the services. When they are unset, the values that `make run`
wrote to .kandev/services.env for its embedded services are used, so management commands from
another terminal reach the same services without set-up.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
import shutil
import tempfile
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from kandev_web.logfilters import QUIET_LOGGERS
from kandev_web.secret_key import secret_key
from recovery.budget import RetrySettings
from recovery.health import HealthSettings
from recovery.hosts import HostAllowlist
from recovery.providers.base import StreamTimeouts

BASE_DIR = Path(__file__).resolve().parent.parent
STATE_DIR = Path(os.environ.get("KANDEV_STATE_DIR", BASE_DIR / ".kandev"))
SERVICES_ENV_FILE = STATE_DIR / "services.env"


def _services_env() -> dict[str, str]:
    if not SERVICES_ENV_FILE.exists():
        return {}
    values = {}
    for line in SERVICES_ENV_FILE.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.startswith("#"):
            values[key.strip()] = value.strip()
    return values


_EMBEDDED = _services_env()


def env_str(name: str, default: str | None = None) -> str:
    value = os.environ.get(name) or _EMBEDDED.get(name) or default
    if value is None:
        raise ImproperlyConfigured(
            f"{name} is not set. Run `make run` (it starts embedded services) or set {name}."
        )
    return value


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, got {raw!r}") from None


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, got {raw!r}")


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


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
    handful serve hundreds of turns. KANDEV_DB_POOL_MAX=0 turns pooling off (one connection per thread)."""
    most = env_int("KANDEV_DB_POOL_MAX", 16)
    if most < 0:
        raise ImproperlyConfigured(f"KANDEV_DB_POOL_MAX must not be negative, got {most}")
    if most == 0:
        return {}
    timeout = env_float("KANDEV_DB_POOL_TIMEOUT", 30.0)
    if timeout <= 0:
        raise ImproperlyConfigured(f"KANDEV_DB_POOL_TIMEOUT must be positive, got {timeout}")
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


DEBUG = env_bool("DEBUG", False)
# KANDEV_SECRET_KEY or SECRET_KEY; without either, one generated once and kept in STATE_DIR.
SECRET_KEY = secret_key(env=os.environ, state_dir=STATE_DIR)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "sessions_app",
    "sessions_app.ladder",
    "axes",
]

MIDDLEWARE = [
    # Outermost, on the event loop: each caller's requests enter the sync thread a few at a time.
    "kandev_web.admission.CredentialAdmission",
    # First of the rest, so every log line of a request carries its id (recovery/logs.py).
    "kandev_web.middleware.request_id_middleware",
    "django.middleware.security.SecurityMiddleware",
    # Django 6's CSP middleware, with this request's websocket origin in connect-src.
    "kandev_web.security_headers.SocketAwareCspMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # After authentication: a signed-in person's pages and every API answer are never stored.
    "kandev_web.security_headers.no_store_middleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes requires: it turns a refused login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "kandev_web.urls"
ASGI_APPLICATION = "kandev_web.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": database_from_url(env_str("DATABASE_URL"))}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS = redis_urls(env_str("REDIS_URL"))
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "kandev_web.channel_layer.RedisChannelLayer",
        "CONFIG": {
            "hosts": [REDIS["channels"]],
            "prefix": env_str("KANDEV_CHANNEL_PREFIX", "kandev"),
            "capacity": 1000,
            "expiry": 30,
        },
    }
}


BROKER_SCHEMES = ("redis", "rediss", "redis+socket", "amqp", "amqps", "pyamqp")


def broker_url(raw: str | None, *, redis_default: str) -> str:
    """The Celery broker: Redis (the default, `make run`'s embedded one) or RabbitMQ."""
    url = raw or redis_default
    scheme = urlparse(url).scheme
    if scheme not in BROKER_SCHEMES:
        raise ImproperlyConfigured(
            f"KANDEV_BROKER_URL must be a redis:// or amqp:// URL (RabbitMQ), got scheme {scheme!r}"
        )
    return url


# KANDEV_BROKER_URL=amqp://user:pass@host:5672/vhost runs the tasks through RabbitMQ: a worker
# that dies returns its unacknowledged messages (acks_late) the moment its connection drops,
# where Redis hides them until the visibility timeout. Unset: Redis, as REDIS_URL names it.
CELERY_BROKER_URL = broker_url(os.environ.get("KANDEV_BROKER_URL"), redis_default=REDIS["celery"])
KANDEV_BROKER_IS_RABBITMQ = urlparse(CELERY_BROKER_URL).scheme in ("amqp", "amqps", "pyamqp")
CELERY_RESULT_BACKEND = None
# No results are stored, so the (disabled) backend holds nothing and is safe to share: without this
# Celery builds one per thread, and each of the threads pool's threads paid ~9 ms of CPU (an
# entry-points scan) at the start of its first turn.
CELERY_RESULT_BACKEND_THREAD_SAFE = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("KANDEV_TASK_SOFT_TIME_LIMIT", 900)
CELERY_TASK_TIME_LIMIT = env_int("KANDEV_TASK_TIME_LIMIT", 960)
CELERY_TASK_DEFAULT_QUEUE = env_str("KANDEV_CELERY_QUEUE", "kandev")
# Redis only: how long a delivered, unacknowledged message stays hidden before it is handed out
# again. RabbitMQ needs none: it requeues a dead consumer's messages at once.
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {} if KANDEV_BROKER_IS_RABBITMQ else {"visibility_timeout": CELERY_TASK_TIME_LIMIT + 60}
)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE = {
    # A retry whose scheduled task was lost with its worker is re-enqueued; stale notices retired.
    "ladder-sweep": {"task": "ladder.sweep", "schedule": env_float("KANDEV_SWEEP_INTERVAL", 10.0)},
    # A queued generation whose run was never enqueued (broker hiccup) is enqueued again.
    "requeue-stale-generations": {
        "task": "sessions_app.requeue_stale_generations",
        "schedule": 30.0,
    },
    # A running generation whose worker died mid-run is handed back (Resume / Start fresh).
    "reap-lost-generations": {"task": "sessions_app.reap_lost_generations", "schedule": 30.0},
    # Queued sessions are told when their place in line moved ("2 ahead").
    "announce-queue-positions": {
        "task": "sessions_app.announce_queue_positions",
        "schedule": env_float("KANDEV_QUEUE_ANNOUNCE_INTERVAL", 2.0),
    },
}
# A running generation whose worker wrote no heartbeat for this long is presumed lost.
KANDEV_WORKER_SILENCE_S = env_float("KANDEV_WORKER_SILENCE_S", 60.0)


def env_whole(name: str, default: int, *, least: int = 0) -> int:
    value = env_int(name, default)
    if value < least:
        raise ImproperlyConfigured(f"{name} must be at least {least}, got {value}")
    return value


# Fair queues (sessions_app/services/queue.py): one person has at most this many prompts running
# at once; the rest wait in line, held off the broker so they never stand in front of another
# person's prompt. 0: no limit.
KANDEV_USER_MAX_RUNNING = env_whole("KANDEV_USER_MAX_RUNNING", 3)
# ACP agents are heavy subprocesses, limited per worker box apart from the worker's threads
# (sessions_app/agent/slots.py): at most KANDEV_ACP_MAX_AGENTS at once, and a new one starts only
# while the box has KANDEV_ACP_MIN_FREE_MB of memory available (0: not checked). A turn that finds
# no slot stays queued ("waiting for an agent slot") and tries again after KANDEV_ACP_SLOT_WAIT_S.
KANDEV_ACP_MAX_AGENTS = env_whole("KANDEV_ACP_MAX_AGENTS", 4, least=1)
KANDEV_ACP_MIN_FREE_MB = env_whole("KANDEV_ACP_MIN_FREE_MB", 512)
KANDEV_ACP_SLOT_WAIT_S = env_float("KANDEV_ACP_SLOT_WAIT_S", 2.0)
if KANDEV_ACP_SLOT_WAIT_S <= 0:
    raise ImproperlyConfigured(
        f"KANDEV_ACP_SLOT_WAIT_S must be positive, got {KANDEV_ACP_SLOT_WAIT_S}"
    )

# ---- Per-person caps (sessions_app/services/caps.py) ------------------------------------------
# What one ordinary account may start, so that one person cannot fill the box for everyone.
# Sessions opened and turns started (prompts, edits, regenerates, resumes and fresh starts) in any
# 60 s, counted in Redis so every Daphne process sees one count; prompts waiting to start at once
# (queued, counted in Postgres). Over a cap the API answers 429 with Retry-After and the page says
# why, keeping the typed text. 0 turns a cap off.
KANDEV_SESSIONS_PER_MINUTE = env_whole("KANDEV_SESSIONS_PER_MINUTE", 20)
KANDEV_PROMPTS_PER_MINUTE = env_whole("KANDEV_PROMPTS_PER_MINUTE", 30)
KANDEV_USER_MAX_QUEUED = env_whole("KANDEV_USER_MAX_QUEUED", 10)
# Requests of one caller (API token or login) in a Daphne process's sync thread at once; the rest
# wait their turn on the event loop, so a flood never stands in front of everyone else
# (kandev_web/admission.py).
KANDEV_USER_REQUESTS_AT_ONCE = env_whole("KANDEV_USER_REQUESTS_AT_ONCE", 4)
# The box's agent slots are shared fairly (sessions_app/agent/runner.py): while someone else who
# holds less than their share waits for an agent, nobody takes more than ceil(slots / people with
# waiting or running agent turns). Off: first come, first served.
KANDEV_ACP_FAIR_SHARE = env_bool("KANDEV_ACP_FAIR_SHARE", True)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "board"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"

DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("KANDEV_MAX_BODY_BYTES", 256 * 1024)
KANDEV_MAX_PROMPT_CHARS = env_int("KANDEV_MAX_PROMPT_CHARS", 32_000)
KANDEV_MAX_WS_FRAME_BYTES = env_int("KANDEV_MAX_WS_FRAME_BYTES", 16 * 1024)

# Streaming: how often token deltas are flushed to the database and pushed (seconds).
KANDEV_STREAM_FLUSH_INTERVAL = env_float("KANDEV_STREAM_FLUSH_INTERVAL", 0.1)
# Flushes per second shared by every stream of the box's worker processes: with more streams than
# this times the interval, each stream flushes less often (0: no shared budget). Each of the
# KANDEV_WORKER_PROCESSES workers (`make run` sets it: one per core) takes an equal share, so the
# box's Daphne renders and sends the same number of frames however many workers there are.
KANDEV_STREAM_FLUSHES_PER_S = env_float("KANDEV_STREAM_FLUSHES_PER_S", 100.0)
if not KANDEV_STREAM_FLUSHES_PER_S >= 0:  # also refuses nan
    raise ImproperlyConfigured(
        f"KANDEV_STREAM_FLUSHES_PER_S must not be negative, got {KANDEV_STREAM_FLUSHES_PER_S}"
    )
KANDEV_WORKER_PROCESSES = env_whole("KANDEV_WORKER_PROCESSES", 1, least=1)
# A reconnect that missed more events than this gets a fresh snapshot instead of a replay.
KANDEV_REPLAY_LIMIT = env_int("KANDEV_REPLAY_LIMIT", 500)

# The retry ladder: one budget per prompt turn (KANDEV_RETRY_DELAYS, _MAX_ATTEMPTS, _JITTER,
# _DEADLINE per model call, _TURN_CAP per turn). Parsed here, so a bad value stops start-up instead of the first failing prompt.
try:
    KANDEV_RETRY = RetrySettings.from_env(os.environ)
except ValueError as error:
    raise ImproperlyConfigured(str(error)) from None

# Stream timeouts of every model call, in seconds; a target may set its own (ProviderTarget's
# *_timeout_s fields). first chunk: until the provider's first byte (a ping counts); idle: between
# any two reads; no progress: without new output (text, thinking, a tool call).
TIMEOUT_LIMIT_S = 3600.0


def env_timeout(name: str, default: float) -> float:
    value = env_float(name, default)
    if not math.isfinite(value) or not 0 < value <= TIMEOUT_LIMIT_S:
        raise ImproperlyConfigured(
            f"{name} must be seconds between 0 and {TIMEOUT_LIMIT_S:g}, got {os.environ[name]!r}"
        )
    return value


_TIMEOUT_DEFAULTS = StreamTimeouts()
KANDEV_STREAM_TIMEOUTS = StreamTimeouts(
    first_chunk_s=env_timeout("KANDEV_FIRST_CHUNK_TIMEOUT", _TIMEOUT_DEFAULTS.first_chunk_s),
    idle_s=env_timeout("KANDEV_IDLE_TIMEOUT", _TIMEOUT_DEFAULTS.idle_s),
    no_progress_s=env_timeout("KANDEV_NO_PROGRESS_TIMEOUT", _TIMEOUT_DEFAULTS.no_progress_s),
)
# Shared provider health (recovery/health.py), kept in Redis for every worker: the circuit
# (KANDEV_CIRCUIT_ENABLED, _FAILURES, _WINDOW_S, _OPEN_S, _OPEN_MAX_S, _PROBE_TIMEOUT_S) and the
# per-target retry budget (KANDEV_RETRY_BUDGET_RATIO, _FLOOR; KANDEV_RETRY_AFTER_CAP_S). Parsed
# here, so a bad value stops start-up.
try:
    KANDEV_HEALTH = HealthSettings.from_env(os.environ)
except ValueError as error:
    raise ImproperlyConfigured(str(error)) from None
# The namespace of this deployment's shared keys in Redis (provider health, metrics).
KANDEV_REDIS_PREFIX = env_str(
    "KANDEV_REDIS_PREFIX", f"{env_str('KANDEV_CHANNEL_PREFIX', 'kandev')}"
)
if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", KANDEV_REDIS_PREFIX):
    raise ImproperlyConfigured(
        f"KANDEV_REDIS_PREFIX must be 1-64 letters, digits, '_', '.' or '-', got {KANDEV_REDIS_PREFIX!r}"
    )

# /metrics for a scraper: `Authorization: Bearer <token>` (staff sessions need none). Empty: only
# staff sessions. A short token is refused at start-up: it would be guessable.
KANDEV_METRICS_TOKEN = os.environ.get("KANDEV_METRICS_TOKEN", "")
if KANDEV_METRICS_TOKEN and len(KANDEV_METRICS_TOKEN) < 24:
    raise ImproperlyConfigured("KANDEV_METRICS_TOKEN must be at least 24 characters when set")

# ACP agents: each session gets its own working directory under this root.
KANDEV_ACP_WORKDIR = Path(
    env_str("KANDEV_ACP_WORKDIR", str(Path(tempfile.gettempdir()) / "kandev-acp"))
)
# One lock file per agent slot; every worker on the box must name the same directory.
KANDEV_ACP_SLOT_DIR = Path(env_str("KANDEV_ACP_SLOT_DIR", str(KANDEV_ACP_WORKDIR / "slots")))
# The only variables an ACP agent process inherits from the worker (besides its target's key):
# the locale, the import path (our mock agent is a module of this project) and the mock agent's
# counters; never the database or Redis URL, the Django secret or other keys.
ACP_INHERITABLE = (
    "LANG",
    "LC_ALL",
    "PYTHONPATH",
    "KANDEV_MOCK_ACP_STATE",
    "KANDEV_MOCK_ACP_RECORD",
)


def acp_inherited_env(environ: dict[str, str] | os._Environ) -> dict[str, str]:
    return {name: environ[name] for name in ACP_INHERITABLE if environ.get(name)}


KANDEV_ACP_INHERITED_ENV = acp_inherited_env(os.environ)

# Real agent CLIs (sessions_app/agent/registry.py): installed by `make install` into node_modules
# from package-lock.json, run by this Node.js, with this PATH and nothing else of the worker's.
KANDEV_AGENT_PACKAGES = Path(env_str("KANDEV_AGENT_PACKAGES", str(BASE_DIR / "node_modules")))
KANDEV_AGENT_NODE = env_str("KANDEV_AGENT_NODE", shutil.which("node") or "/usr/bin/node")
if not Path(KANDEV_AGENT_NODE).is_absolute():
    raise ImproperlyConfigured(
        f"KANDEV_AGENT_NODE must be an absolute path to node, got {KANDEV_AGENT_NODE!r}"
    )
_AGENT_PATH_DIRS = (str(Path(KANDEV_AGENT_NODE).parent), "/usr/local/bin", "/usr/bin", "/bin")
KANDEV_AGENT_PATH = env_str("KANDEV_AGENT_PATH", os.pathsep.join(dict.fromkeys(_AGENT_PATH_DIRS)))
# Every agent runs confined (sessions_app/agent/sandbox.py): bubblewrap from Debian, with socat
# for its one way out to its provider. "off" runs agents with the worker's whole view of the box:
# only for an operator who confines the worker some other way, and every launch logs a warning.
KANDEV_AGENT_SANDBOX = env_str("KANDEV_AGENT_SANDBOX", "bwrap")
if KANDEV_AGENT_SANDBOX not in ("bwrap", "off"):
    raise ImproperlyConfigured(
        f"KANDEV_AGENT_SANDBOX must be bwrap or off, got {KANDEV_AGENT_SANDBOX!r}"
    )
KANDEV_AGENT_BWRAP = env_str("KANDEV_AGENT_BWRAP", shutil.which("bwrap") or "/usr/bin/bwrap")
if not Path(KANDEV_AGENT_BWRAP).is_absolute():
    raise ImproperlyConfigured(
        f"KANDEV_AGENT_BWRAP must be an absolute path to bwrap, got {KANDEV_AGENT_BWRAP!r}"
    )
# Where the worker listens for a sandbox's connections to its provider (short: socket paths are
# limited to 108 bytes).
KANDEV_AGENT_EGRESS_DIR = Path(
    env_str("KANDEV_AGENT_EGRESS_DIR", str(Path(tempfile.gettempdir()) / "kandev-egress"))
)
# How long an agent gets to exit after its prompt ends (stdin closed) before its whole process
# group is killed; stop, cancel and timeouts kill at once after the cancel grace.
KANDEV_AGENT_EXIT_GRACE_S = env_float("KANDEV_AGENT_EXIT_GRACE_S", 0.2)
if KANDEV_AGENT_EXIT_GRACE_S < 0:
    raise ImproperlyConfigured(
        f"KANDEV_AGENT_EXIT_GRACE_S must not be negative, got {KANDEV_AGENT_EXIT_GRACE_S}"
    )
# `seed_demo` uses it for the demo account when set (else --password, else a generated one).
KANDEV_DEMO_PASSWORD = os.environ.get("KANDEV_DEMO_PASSWORD", "")
# The local staff login `admin` that seed_demo makes when set (`make run` sets it).
KANDEV_ADMIN_PASSWORD = os.environ.get("KANDEV_ADMIN_PASSWORD", "")

# The mock provider server that `make run` starts and the demo target points at.
KANDEV_MOCK_PROVIDER_URL = env_str("KANDEV_MOCK_PROVIDER_URL", "http://127.0.0.1:8765")

# ---- Provider targets: what an operator's target may name -----------------------------------
# Checked when a target is saved (admin, `manage.py target_add`) and again each time a worker
# uses one, so a row edited in the database directly is refused too.
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
# The app's own secrets: never a provider key, whatever an operator lists.
_NEVER_A_PROVIDER_KEY = frozenset({"SECRET_KEY", "DATABASE_URL", "REDIS_URL"})
DEFAULT_PROVIDER_KEY_ENVS = [
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
    "GROQ_API_KEY",
    "MISTRAL_API_KEY",
    "DEEPSEEK_API_KEY",
    "TOGETHER_API_KEY",
    "FIREWORKS_API_KEY",
    "XAI_API_KEY",
]
# Public providers, plus loopback for `make run`'s mock provider and the tests. A shared
# deployment lists only what it calls (docker-compose.yml shows one).
DEFAULT_PROVIDER_HOSTS = [
    "api.anthropic.com",
    "api.openai.com",
    "generativelanguage.googleapis.com",  # Gemini CLI's default
    "localhost",
    "127.0.0.1",
    "[::1]",
]


def provider_key_envs(name: str, default: list[str]) -> frozenset[str]:
    """The environment variables a target may name as its key (comma-separated names)."""
    names = env_list(name, default)
    for key_name in names:
        if not _ENV_NAME.match(key_name):
            raise ImproperlyConfigured(f"{name} lists {key_name!r}, which is not a variable name")
        if key_name in _NEVER_A_PROVIDER_KEY or key_name.startswith("KANDEV_"):
            raise ImproperlyConfigured(
                f"{name} lists {key_name}, one of this app's own settings; it can never be a "
                "provider key"
            )
    return frozenset(names)


def provider_hosts(name: str, default: list[str]) -> HostAllowlist:
    """The hosts a target's base URL may name: comma-separated `host` or `host:port`."""
    try:
        return HostAllowlist.parse(env_list(name, default))
    except ValueError as error:
        raise ImproperlyConfigured(f"{name}: {error}") from None


KANDEV_PROVIDER_KEY_ENVS = provider_key_envs("KANDEV_PROVIDER_KEY_ENVS", DEFAULT_PROVIDER_KEY_ENVS)
KANDEV_PROVIDER_HOSTS = provider_hosts("KANDEV_PROVIDER_HOSTS", DEFAULT_PROVIDER_HOSTS)
# --- Hardened edges (issue 9): login throttling, cookies, TLS, websocket limits --------------------


def _lockout_parameters(raw: str) -> list[str | list[str]]:
    """KANDEV_LOGIN_LOCKOUT_BY: comma-separated alternatives, each one field or fields joined by
    '+', e.g. "username+ip_address" (one counter per username from one address)."""
    known = {"username", "ip_address", "user_agent"}
    parameters: list[str | list[str]] = []
    for alternative in (item.strip() for item in raw.split(",") if item.strip()):
        fields = [field.strip() for field in alternative.split("+")]
        if not set(fields) <= known:
            raise ImproperlyConfigured(
                f"KANDEV_LOGIN_LOCKOUT_BY names {alternative!r}; use {', '.join(sorted(known))}"
                " joined by '+', alternatives separated by ','"
            )
        parameters.append(fields[0] if len(fields) == 1 else fields)
    if not parameters:
        raise ImproperlyConfigured("KANDEV_LOGIN_LOCKOUT_BY must name at least one field")
    return parameters


# django-axes counts failed logins on both logins (the app's and the admin's): they all go through
# django.contrib.auth.authenticate, which the Axes backend guards. Attempts live in the database,
# so every Daphne process sees the same count. Staff unlock an account in the admin (Axes section).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("KANDEV_LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = dt.timedelta(seconds=env_int("KANDEV_LOGIN_COOLOFF_S", 15 * 60))
# Per username *and* address by default: a guesser is stopped without letting anyone lock the
# real user out from elsewhere.
AXES_LOCKOUT_PARAMETERS = _lockout_parameters(
    env_str("KANDEV_LOGIN_LOCKOUT_BY", "username+ip_address")
)
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "sessions_app.views.login_locked_out"
if AXES_FAILURE_LIMIT < 1 or AXES_COOLOFF_TIME.total_seconds() < 1:
    raise ImproperlyConfigured("KANDEV_LOGIN_FAILURE_LIMIT and KANDEV_LOGIN_COOLOFF_S must be >= 1")

# Behind TLS (KANDEV_HTTPS: served over https, directly or by a proxy that sets
# X-Forwarded-Proto) with DEBUG off, cookies travel only over https and browsers are told to keep
# to https (HSTS; Django sends it on secure requests only). Each can be set on its own.
KANDEV_HTTPS = env_bool("KANDEV_HTTPS", False)
_SECURE_BY_DEFAULT = KANDEV_HTTPS and not DEBUG
# No inline script or style, nothing framing the app (kandev_web/security_headers.py adds the
# request's ws:/wss: origin to connect-src).
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("KANDEV_SECURE_COOKIES", _SECURE_BY_DEFAULT)
SECURE_HSTS_SECONDS = env_int("KANDEV_HSTS_SECONDS", 31_536_000 if _SECURE_BY_DEFAULT else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("KANDEV_HSTS_INCLUDE_SUBDOMAINS", False)
if KANDEV_HTTPS:
    # KANDEV_HTTPS promises every request arrives over https; the proxy in front says so here.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
if SECURE_HSTS_SECONDS < 0:
    raise ImproperlyConfigured("KANDEV_HSTS_SECONDS must be >= 0")

# Snapshot/resume requests one socket may make: a burst, then this many a minute (consumers.py).
KANDEV_WS_SYNC_BURST = env_int("KANDEV_WS_SYNC_BURST", 5)
KANDEV_WS_SYNCS_PER_MINUTE = env_float("KANDEV_WS_SYNCS_PER_MINUTE", 12.0)
# Seconds of quiet after a live event before a socket checks that no push was lost.
KANDEV_WS_QUIET_CHECK_S = env_float("KANDEV_WS_QUIET_CHECK_S", 2.0)
if not KANDEV_WS_QUIET_CHECK_S > 0:
    raise ImproperlyConfigured(
        f"KANDEV_WS_QUIET_CHECK_S must be positive, got {KANDEV_WS_QUIET_CHECK_S}"
    )
if KANDEV_WS_SYNC_BURST < 1 or KANDEV_WS_SYNCS_PER_MINUTE <= 0:
    raise ImproperlyConfigured("KANDEV_WS_SYNC_BURST must be >= 1, KANDEV_WS_SYNCS_PER_MINUTE > 0")

# ---- Live sockets follow the login; one person's are capped (sessions_app/services/sockets.py) ---
# At most this many open sockets (session pages and boards, every Daphne process together) per
# person, counted in Redis. The next one is accepted, told why in an error frame and closed with
# 4429; the page shows it and does not retry on its own. 0: no cap.
KANDEV_WS_MAX_PER_USER = env_whole("KANDEV_WS_MAX_PER_USER", 30)
# Logout, deactivation, a password change and a deleted login session close a person's sockets at
# once (signals). This is the bound for a login that ends without one (a session that expires, a
# row deleted by raw SQL): every socket re-checks its login this often, and refreshes its entry in
# the count. An entry not refreshed for three of these (a crashed process's) stops counting.
KANDEV_WS_LOGIN_CHECK_S = env_float("KANDEV_WS_LOGIN_CHECK_S", 30.0)
if not 0 < KANDEV_WS_LOGIN_CHECK_S <= TIMEOUT_LIMIT_S:
    raise ImproperlyConfigured(
        f"KANDEV_WS_LOGIN_CHECK_S must be seconds between 0 and {TIMEOUT_LIMIT_S:g}, "
        f"got {KANDEV_WS_LOGIN_CHECK_S}"
    )

# Logs: one JSON object per line with request and turn ids, redacted (recovery/logs.py), or
# KANDEV_LOG_FORMAT=plain for a person reading a terminal.
KANDEV_LOG_FORMAT = env_str("KANDEV_LOG_FORMAT", "json")
if KANDEV_LOG_FORMAT not in ("json", "plain"):
    raise ImproperlyConfigured(
        f"KANDEV_LOG_FORMAT must be json or plain, got {KANDEV_LOG_FORMAT!r}"
    )

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {"()": "recovery.logs.JsonFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": KANDEV_LOG_FORMAT,
            "filters": ["short_security_warnings"],
        }
    },
    # The ACP SDK logs on the root logger itself; see the filter's docstring for what it drops.
    "filters": {
        "acp_sdk_noise": {"()": "recovery.providers.acp.sdk_logs.DropUnparsedUpdates"},
        # A suspicious request (answered 400) is one warning line, no traceback.
        "short_security_warnings": {"()": "kandev_web.logfilters.ShortSecurityWarnings"},
        # Idle sweeps (nothing found) log at DEBUG: see kandev_web/logfilters.py.
        "quiet_sweeps": {
            "()": "kandev_web.logfilters.QuietPeriodicTasks",
            "task_names": [entry["task"] for entry in CELERY_BEAT_SCHEDULE.values()],
        },
    },
    "root": {
        "handlers": ["console"],
        "level": env_str("LOG_LEVEL", "INFO"),
        "filters": ["acp_sdk_noise"],
    },
    "loggers": {
        "django.channels.server": {"level": "WARNING"},
        **{name: {"filters": ["quiet_sweeps"]} for name in QUIET_LOGGERS},
    },
}
