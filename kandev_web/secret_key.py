"""Django's SECRET_KEY when none is configured: generated once and kept in the state directory,
the way `make run` keeps the demo password, so no process runs with a key anyone can read in the
source, and sessions and signed values survive a restart.

Every process (Daphne, the worker, beat, manage.py) evaluates settings.py and so calls
``secret_key``; those started together race to create the file, and all of them end up with the
first key written (it is linked into place whole, never written in place).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

ENV_NAMES = ("KANDEV_SECRET_KEY", "SECRET_KEY")
FILE_NAME = "secret_key"


def secret_key(*, env: Mapping[str, str], state_dir: Path) -> str:
    """The configured key (KANDEV_SECRET_KEY, then SECRET_KEY), else the one kept in
    ``state_dir``, generated the first time."""
    for name in ENV_NAMES:
        if env.get(name):
            return env[name]
    return secret_key_kept(state_dir=state_dir)


def secret_key_kept(*, state_dir: Path) -> str:
    path = state_dir / FILE_NAME
    try:
        kept = _read(path)
        if kept:
            return kept
        state_dir.mkdir(parents=True, exist_ok=True)
        draft = state_dir / f".{FILE_NAME}.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_urlsafe(50) + "\n")
        try:
            os.link(draft, path)  # fails if another process got there first: theirs is kept
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    except OSError as error:
        raise ImproperlyConfigured(
            f"No SECRET_KEY is set and none can be kept in {state_dir} ({error}). "
            "Set KANDEV_SECRET_KEY (or SECRET_KEY), or make KANDEV_STATE_DIR writable."
        ) from None
    kept = _read(path)
    if not kept:
        raise ImproperlyConfigured(f"{path} is empty; delete it or set KANDEV_SECRET_KEY.")
    return kept


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return ""
