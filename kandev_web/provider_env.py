"""What an operator's provider target may name, read from the environment: the variables that
may hold its key (KANDEV_PROVIDER_KEY_ENVS) and the hosts its base URL may point at
(KANDEV_PROVIDER_HOSTS). Checked when a target is saved and again each time a worker uses one;
a bad list stops start-up with a message naming the variable."""

from __future__ import annotations

import re

from django.core.exceptions import ImproperlyConfigured

from kandev_web.env import env_list
from recovery.hosts import HostAllowlist

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

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
# The app's own secrets: never a provider key, whatever an operator lists.
_NEVER_A_PROVIDER_KEY = frozenset({"SECRET_KEY", "DATABASE_URL", "REDIS_URL"})


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
