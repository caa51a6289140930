"""One flat settings module. Everything comes from the environment, read by the tiny typed
helpers of kandev_web/env.py that fail loudly (ImproperlyConfigured, naming the variable) on bad
values; the services' URLs are read by kandev_web/service_urls.py.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
from pathlib import Path

from django.utils.csp import CSP

from kandev_web.agent_env import acp_inherited_env, agent_path_default
from kandev_web.beat_schedule import beat_schedule
from kandev_web.env import (
    BASE_DIR,
    STATE_DIR,
    env_absolute_path,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_matching,
    env_not_negative,
    env_parsed,
    env_paths,
    env_positive,
    env_seconds,
    env_secret,
    env_str,
    env_whole,
    lockout_parameters,
)
from kandev_web.logging_config import LOG_FORMATS, logging_config
from kandev_web.provider_env import (
    DEFAULT_PROVIDER_HOSTS,
    DEFAULT_PROVIDER_KEY_ENVS,
    provider_hosts,
    provider_key_envs,
)
from kandev_web.secret_key import secret_key
from kandev_web.service_urls import broker_url, database_from_url, is_rabbitmq, redis_urls
from recovery.budget import RetrySettings
from recovery.circuit import HealthSettings
from recovery.providers.base import StreamTimeouts

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
    # Listed for its templates and static files: /api/docs then loads Swagger UI from our own
    # static files (collected with the rest) instead of a CDN, so the docs work offline.
    "ninja",
    "sessions_app",
    "sessions_app.ladder",
    "sessions_app.workspaces",
    "sessions_app.effects",
    "sessions_app.approvals",
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

# KANDEV_BROKER_URL=amqp://... runs the tasks through RabbitMQ, which returns a dead worker's
# unacked messages at once (Redis hides them until a timeout). Unset: Redis, as REDIS_URL says.
CELERY_BROKER_URL = broker_url(os.environ.get("KANDEV_BROKER_URL"), redis_default=REDIS["celery"])
KANDEV_BROKER_IS_RABBITMQ = is_rabbitmq(CELERY_BROKER_URL)
CELERY_RESULT_BACKEND = None
# No results are stored, so the disabled backend is safe to share: else Celery builds one per
# thread, each paying for an entry-points scan at the start of its first turn.
CELERY_RESULT_BACKEND_THREAD_SAFE = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("KANDEV_TASK_SOFT_TIME_LIMIT", 900)
CELERY_TASK_TIME_LIMIT = env_int("KANDEV_TASK_TIME_LIMIT", 960)
# An agent's request waits this long for a person, then is answered reject. A turn's own time
# limit is not spent meanwhile, up to this much in all, so a turn's task may run that much longer.
KANDEV_APPROVAL_TIMEOUT = env_positive("KANDEV_APPROVAL_TIMEOUT", 1800.0)
KANDEV_TURN_SOFT_TIME_LIMIT = CELERY_TASK_SOFT_TIME_LIMIT + int(KANDEV_APPROVAL_TIMEOUT)
KANDEV_TURN_TIME_LIMIT = CELERY_TASK_TIME_LIMIT + int(KANDEV_APPROVAL_TIMEOUT)
CELERY_TASK_DEFAULT_QUEUE = env_str("KANDEV_CELERY_QUEUE", "kandev")
# Redis only: how long a delivered, unacknowledged message stays hidden before it is handed out
# again (RabbitMQ requeues a dead consumer's messages at once).
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {} if KANDEV_BROKER_IS_RABBITMQ else {"visibility_timeout": KANDEV_TURN_TIME_LIMIT + 60}
)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE = beat_schedule(
    sweep_s=env_float("KANDEV_SWEEP_INTERVAL", 10.0),
    prune_s=env_float("KANDEV_SNAPSHOT_PRUNE_INTERVAL", 600.0),
    announce_s=env_float("KANDEV_QUEUE_ANNOUNCE_INTERVAL", 2.0),
)
# A running generation whose worker wrote no heartbeat for this long is presumed lost.
KANDEV_WORKER_SILENCE_S = env_float("KANDEV_WORKER_SILENCE_S", 60.0)

# Fair queues (sessions_app/services/lifecycle/queued.py): at most this many prompts of one person
# run at once; the rest wait in line off the broker, never in front of others'. 0: no limit.
KANDEV_USER_MAX_RUNNING = env_whole("KANDEV_USER_MAX_RUNNING", 3)
# ACP agents are heavy subprocesses, limited per worker box apart from the worker's threads
# (sessions_app/agent/slots.py): at most KANDEV_ACP_MAX_AGENTS at once, and a new one starts only
# while the box has KANDEV_ACP_MIN_FREE_MB of memory available (0: not checked). A turn that finds
# no slot stays queued ("waiting for an agent slot") and tries again after KANDEV_ACP_SLOT_WAIT_S.
KANDEV_ACP_MAX_AGENTS = env_whole("KANDEV_ACP_MAX_AGENTS", 4, least=1)
KANDEV_ACP_MIN_FREE_MB = env_whole("KANDEV_ACP_MIN_FREE_MB", 512)
KANDEV_ACP_SLOT_WAIT_S = env_positive("KANDEV_ACP_SLOT_WAIT_S", 2.0)

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
# Written by `collectstatic` (`make run` and the image run it), served by Daphne through WhiteNoise
# (kandev_web/static_files.py). Hashed names from the manifest: a changed live.js gets a new URL,
# cached for good, while pages are never stored, so no page runs yesterday's script.
STATIC_ROOT = Path(env_str("KANDEV_STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("KANDEV_MAX_BODY_BYTES", 256 * 1024)
KANDEV_MAX_PROMPT_CHARS = env_int("KANDEV_MAX_PROMPT_CHARS", 32_000)
KANDEV_MAX_WS_FRAME_BYTES = env_int("KANDEV_MAX_WS_FRAME_BYTES", 16 * 1024)

# Streaming: how often token deltas are flushed to the database and pushed (seconds).
KANDEV_STREAM_FLUSH_INTERVAL = env_float("KANDEV_STREAM_FLUSH_INTERVAL", 0.1)
# Flushes per second shared by every stream of the box's worker processes: with more streams than
# this times the interval, each stream flushes less often (0: no shared budget). Each of the
# KANDEV_WORKER_PROCESSES workers (`make run` sets it: one per core) takes an equal share, so the
# box's Daphne renders and sends the same number of frames however many workers there are.
KANDEV_STREAM_FLUSHES_PER_S = env_not_negative("KANDEV_STREAM_FLUSHES_PER_S", 100.0)
KANDEV_WORKER_PROCESSES = env_whole("KANDEV_WORKER_PROCESSES", 1, least=1)
# A reconnect that missed more events than this gets a fresh snapshot instead of a replay.
KANDEV_REPLAY_LIMIT = env_int("KANDEV_REPLAY_LIMIT", 500)

# The retry ladder: one budget per prompt turn (KANDEV_RETRY_DELAYS, _MAX_ATTEMPTS, _JITTER,
# _DEADLINE per model call, _TURN_CAP per turn). Parsed here, so a bad value stops start-up
# instead of the first failing prompt.
KANDEV_RETRY = env_parsed(RetrySettings.from_env)

# Stream timeouts of every model call, in seconds; a target may set its own (ProviderTarget's
# *_timeout_s fields), each at most an hour. first chunk: until the provider's first byte (a ping
# counts); idle: between any two reads; no progress: without new output (text, thinking, a tool
# call).
_TIMEOUT_DEFAULTS = StreamTimeouts()
KANDEV_STREAM_TIMEOUTS = StreamTimeouts(
    first_chunk_s=env_seconds("KANDEV_FIRST_CHUNK_TIMEOUT", _TIMEOUT_DEFAULTS.first_chunk_s),
    idle_s=env_seconds("KANDEV_IDLE_TIMEOUT", _TIMEOUT_DEFAULTS.idle_s),
    no_progress_s=env_seconds("KANDEV_NO_PROGRESS_TIMEOUT", _TIMEOUT_DEFAULTS.no_progress_s),
)
# Shared provider health (recovery/circuit.py), kept in Redis for every worker: the circuit
# (KANDEV_CIRCUIT_ENABLED, _FAILURES, _WINDOW_S, _OPEN_S, _OPEN_MAX_S, _PROBE_TIMEOUT_S) and the
# per-target retry budget (KANDEV_RETRY_BUDGET_RATIO, _FLOOR; KANDEV_RETRY_AFTER_CAP_S). Parsed
# here, so a bad value stops start-up.
KANDEV_HEALTH = env_parsed(HealthSettings.from_env)
# The namespace of this deployment's shared keys in Redis (provider health, metrics).
KANDEV_REDIS_PREFIX = env_matching(
    "KANDEV_REDIS_PREFIX",
    env_str("KANDEV_CHANNEL_PREFIX", "kandev"),
    pattern=r"[A-Za-z0-9_.-]{1,64}",
    described="1-64 letters, digits, '_', '.' or '-'",
)

# /metrics for a scraper: `Authorization: Bearer <token>` (staff sessions need none). Empty: only
# staff sessions. A short token is refused at start-up: it would be guessable.
KANDEV_METRICS_TOKEN = env_secret("KANDEV_METRICS_TOKEN", least_chars=24)

# ACP agents' folders (each session's, the tasks' worktrees, the snapshots) live under this root.
KANDEV_ACP_WORKDIR = Path(env_str("KANDEV_ACP_WORKDIR", f"{tempfile.gettempdir()}/kandev-acp"))
KANDEV_SNAPSHOT_MAX_MB = env_int("KANDEV_SNAPSHOT_MAX_MB", 200)  # larger: effects unknown
KANDEV_SNAPSHOT_MAX_FILES = env_int("KANDEV_SNAPSHOT_MAX_FILES", 20_000)
# Snapshots no Start fresh can use any more are pruned (sessions_app/effects/pruning.py): at most
# this many sessions' stores are garbage-collected per sweep (every KANDEV_SNAPSHOT_PRUNE_INTERVAL).
KANDEV_SNAPSHOT_PRUNE_BATCH = env_whole("KANDEV_SNAPSHOT_PRUNE_BATCH", 20, least=1)
# One lock file per agent slot; every worker on the box must name the same directory.
KANDEV_ACP_SLOT_DIR = Path(env_str("KANDEV_ACP_SLOT_DIR", str(KANDEV_ACP_WORKDIR / "slots")))
KANDEV_PROJECT_ROOTS = env_paths("KANDEV_PROJECT_ROOTS")  # where projects may live; none: none
# The only variables an ACP agent process inherits from the worker (kandev_web/agent_env.py).
KANDEV_ACP_INHERITED_ENV = acp_inherited_env(os.environ)

# Real agent CLIs (sessions_app/agent/registry.py): installed by `make install` into node_modules
# from package-lock.json, run by this Node.js, with this PATH and nothing else of the worker's.
KANDEV_AGENT_PACKAGES = Path(env_str("KANDEV_AGENT_PACKAGES", str(BASE_DIR / "node_modules")))
KANDEV_AGENT_NODE = env_absolute_path(
    "KANDEV_AGENT_NODE", shutil.which("node") or "/usr/bin/node", of="node"
)
KANDEV_AGENT_PATH = env_str("KANDEV_AGENT_PATH", agent_path_default(KANDEV_AGENT_NODE))
# Every agent runs confined (sessions_app/agent/sandbox.py): bubblewrap from Debian, with socat
# for its one way out to its provider. "off" runs agents with the worker's whole view of the box:
# only for an operator who confines the worker some other way, and every launch logs a warning.
KANDEV_AGENT_SANDBOX = env_choice("KANDEV_AGENT_SANDBOX", "bwrap", ("bwrap", "off"))
KANDEV_AGENT_BWRAP = env_absolute_path(
    "KANDEV_AGENT_BWRAP", shutil.which("bwrap") or "/usr/bin/bwrap", of="bwrap"
)
# Where the worker listens for a sandbox's connections to its provider (short: socket paths are
# limited to 108 bytes).
KANDEV_AGENT_EGRESS_DIR = Path(
    env_str("KANDEV_AGENT_EGRESS_DIR", str(Path(tempfile.gettempdir()) / "kandev-egress"))
)
# How long an agent gets to exit after its prompt ends (stdin closed) before its whole process
# group is killed; stop, cancel and timeouts kill at once after the cancel grace.
KANDEV_AGENT_EXIT_GRACE_S = env_not_negative("KANDEV_AGENT_EXIT_GRACE_S", 0.2)
# `seed_demo` uses it for the demo account when set (else --password, else a generated one).
KANDEV_DEMO_PASSWORD = os.environ.get("KANDEV_DEMO_PASSWORD", "")
# The local staff login `admin` that seed_demo makes when set (`make run` sets it).
KANDEV_ADMIN_PASSWORD = os.environ.get("KANDEV_ADMIN_PASSWORD", "")

# The mock provider server that `make run` starts and the demo target points at.
KANDEV_MOCK_PROVIDER_URL = env_str("KANDEV_MOCK_PROVIDER_URL", "http://127.0.0.1:8765")

# ---- Provider targets: what an operator's target may name (kandev_web/provider_env.py) -------
# Checked when a target is saved (admin, `manage.py target_add`) and again each time a worker
# uses one, so a row edited in the database directly is refused too.
KANDEV_PROVIDER_KEY_ENVS = provider_key_envs("KANDEV_PROVIDER_KEY_ENVS", DEFAULT_PROVIDER_KEY_ENVS)
KANDEV_PROVIDER_HOSTS = provider_hosts("KANDEV_PROVIDER_HOSTS", DEFAULT_PROVIDER_HOSTS)

# ---- Hardened edges: login throttling, cookies, TLS, websocket limits -------------------------
# django-axes counts failed logins on both logins (the app's and the admin's): they all go through
# django.contrib.auth.authenticate, which the Axes backend guards. Attempts live in the database,
# so every Daphne process sees the same count. Staff unlock an account in the admin (Axes section).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_whole("KANDEV_LOGIN_FAILURE_LIMIT", 5, least=1)
AXES_COOLOFF_TIME = dt.timedelta(seconds=env_whole("KANDEV_LOGIN_COOLOFF_S", 15 * 60, least=1))
# Per username *and* address by default: a guesser is stopped without letting anyone lock the
# real user out from elsewhere.
AXES_LOCKOUT_PARAMETERS = lockout_parameters("KANDEV_LOGIN_LOCKOUT_BY", "username+ip_address")
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "sessions_app.views.login_locked_out"

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
SECURE_HSTS_SECONDS = env_whole("KANDEV_HSTS_SECONDS", 31_536_000 if _SECURE_BY_DEFAULT else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("KANDEV_HSTS_INCLUDE_SUBDOMAINS", False)
if KANDEV_HTTPS:
    # KANDEV_HTTPS promises every request arrives over https; the proxy in front says so here.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Snapshot/resume requests one socket may make: a burst, then this many a minute (consumers.py).
KANDEV_WS_SYNC_BURST = env_whole("KANDEV_WS_SYNC_BURST", 5, least=1)
KANDEV_WS_SYNCS_PER_MINUTE = env_positive("KANDEV_WS_SYNCS_PER_MINUTE", 12.0)
# Seconds of quiet after a live event before a socket checks that no push was lost.
KANDEV_WS_QUIET_CHECK_S = env_positive("KANDEV_WS_QUIET_CHECK_S", 2.0)

# ---- Live sockets follow the login; one person's are capped (sessions_app/services/sockets.py) ---
# At most this many open sockets (session pages and boards, every Daphne process together) per
# person, counted in Redis. The next one is accepted, told why in an error frame and closed with
# 4429; the page shows it and does not retry on its own. 0: no cap.
KANDEV_WS_MAX_PER_USER = env_whole("KANDEV_WS_MAX_PER_USER", 30)
# Logout, deactivation, a password change and a deleted login session close a person's sockets at
# once (signals). This is the bound for a login that ends without one (a session that expires, a
# row deleted by raw SQL): every socket re-checks its login this often, and refreshes its entry in
# the count. An entry not refreshed for three of these (a crashed process's) stops counting.
KANDEV_WS_LOGIN_CHECK_S = env_seconds("KANDEV_WS_LOGIN_CHECK_S", 30.0)

# Logs: one JSON object per line with request and turn ids, redacted (recovery/logs.py), or
# KANDEV_LOG_FORMAT=plain for a person reading a terminal.
KANDEV_LOG_FORMAT = env_choice("KANDEV_LOG_FORMAT", "json", LOG_FORMATS)

LOGGING = logging_config(
    log_format=KANDEV_LOG_FORMAT,
    level=env_str("LOG_LEVEL", "INFO"),
    periodic_tasks=[entry["task"] for entry in CELERY_BEAT_SCHEDULE.values()],
)
