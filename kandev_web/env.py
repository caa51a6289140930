"""Tiny typed readers of the environment, for settings.py: each returns the variable's value (or
its default when unset or empty) and raises ImproperlyConfigured naming the variable on a bad
value, so a typo stops start-up instead of the first prompt that needs the setting.

DATABASE_URL and REDIS_URL name the services. When they are unset, env_str falls back on the
values that `make run` wrote to .kandev/services.env for its embedded services, so management
commands from another terminal (and the tests' helpers) reach the same services without set-up.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
STATE_DIR = Path(os.environ.get("KANDEV_STATE_DIR", BASE_DIR / ".kandev"))
SERVICES_ENV_FILE = STATE_DIR / "services.env"


def services_env(path: Path) -> dict[str, str]:
    """NAME=value lines of ``path`` (``#`` starts a comment line); empty when there is none."""
    if not path.exists():
        return {}
    values = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.startswith("#"):
            values[key.strip()] = value.strip()
    return values


_EMBEDDED = services_env(SERVICES_ENV_FILE)


def _raw(name: str) -> str | None:
    """The variable's value, None when it is unset or empty."""
    return os.environ.get(name) or None


def env_str(name: str, default: str | None = None) -> str:
    value = os.environ.get(name) or _EMBEDDED.get(name) or default
    if value is None:
        raise ImproperlyConfigured(
            f"{name} is not set. Run `make run` (it starts embedded services) or set {name}."
        )
    return value


def env_int(name: str, default: int) -> int:
    raw = _raw(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, got {raw!r}") from None


def env_whole(name: str, default: int, *, least: int = 0) -> int:
    """A whole number no smaller than ``least`` (0: counts and caps, where 0 often means off)."""
    value = env_int(name, default)
    if value < least:
        raise ImproperlyConfigured(f"{name} must be at least {least}, got {value}")
    return value


def env_float(name: str, default: float) -> float:
    raw = _raw(name)
    if raw is None:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None


def env_positive(name: str, default: float) -> float:
    """A number above 0 (an interval or a timeout that must pass); nan is refused too."""
    value = env_float(name, default)
    if not value > 0:
        raise ImproperlyConfigured(f"{name} must be positive, got {value}")
    return value


def env_not_negative(name: str, default: float) -> float:
    """A number of 0 or more (a grace or a rate where 0 means none); nan is refused too."""
    value = env_float(name, default)
    if not value >= 0:
        raise ImproperlyConfigured(f"{name} must not be negative, got {value}")
    return value


# The longest wait a setting may name: an hour.
SECONDS_LIMIT = 3600.0


def env_seconds(name: str, default: float, *, most: float = SECONDS_LIMIT) -> float:
    """Seconds above 0 and at most ``most``: a wait nobody means to be endless."""
    value = env_float(name, default)
    if not math.isfinite(value) or not 0 < value <= most:
        raise ImproperlyConfigured(
            f"{name} must be seconds between 0 and {most:g}, got {_raw(name) or value!r}"
        )
    return value


def env_bool(name: str, default: bool) -> bool:
    raw = _raw(name)
    if raw is None:
        return default
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, got {raw!r}")


def env_choice(name: str, default: str, choices: Sequence[str]) -> str:
    value = env_str(name, default)
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be {' or '.join(choices)}, got {value!r}")
    return value


def env_absolute_path(name: str, default: str, *, of: str) -> str:
    """A program named by its absolute path, so no PATH lookup decides which one runs."""
    value = env_str(name, default)
    if not Path(value).is_absolute():
        raise ImproperlyConfigured(f"{name} must be an absolute path to {of}, got {value!r}")
    return value


def env_matching(name: str, default: str, *, pattern: str, described: str) -> str:
    value = env_str(name, default)
    if not re.fullmatch(pattern, value):
        raise ImproperlyConfigured(f"{name} must be {described}, got {value!r}")
    return value


def env_secret(name: str, *, least_chars: int) -> str:
    """A token that may be left unset (empty), but is never short enough to guess when set."""
    value = os.environ.get(name, "")
    if value and len(value) < least_chars:
        raise ImproperlyConfigured(f"{name} must be at least {least_chars} characters when set")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_paths(name: str) -> tuple[str, ...]:
    """Absolute directories separated by ':' (like PATH); empty or unset is none at all."""
    paths = tuple(item for item in (os.environ.get(name) or "").split(":") if item)
    for path in paths:
        if not os.path.isabs(path) or "\x00" in path:
            raise ImproperlyConfigured(f"{name} must list absolute paths separated by ':'")
    return paths


def env_parsed[T](parse: Callable[[Mapping[str, str]], T]) -> T:
    """A settings object that reads its own variables (``RetrySettings.from_env``), its
    ValueError (which names the variable) turned into ImproperlyConfigured."""
    try:
        return parse(os.environ)
    except ValueError as error:
        raise ImproperlyConfigured(str(error)) from None


# ---- django-axes' lockout parameters ---------------------------------------------------------

LOCKOUT_FIELDS = frozenset({"username", "ip_address", "user_agent"})


def lockout_parameters(name: str, default: str) -> list[str | list[str]]:
    """django-axes' lockout parameters: comma-separated alternatives, each one field or fields
    joined by '+', e.g. "username+ip_address" (one counter per username from one address)."""
    parameters: list[str | list[str]] = []
    for alternative in (item.strip() for item in env_str(name, default).split(",")):
        if not alternative:
            continue
        fields = [field.strip() for field in alternative.split("+")]
        if not set(fields) <= LOCKOUT_FIELDS:
            raise ImproperlyConfigured(
                f"{name} names {alternative!r}; use {', '.join(sorted(LOCKOUT_FIELDS))}"
                " joined by '+', alternatives separated by ','"
            )
        parameters.append(fields[0] if len(fields) == 1 else fields)
    if not parameters:
        raise ImproperlyConfigured(f"{name} must name at least one field")
    return parameters
