"""A pytest plugin (pytest.ini loads it with -p): tests see static files as production does.

Pages name the hashed files of the manifest storage (settings.STORAGES), which exist only once
`collectstatic` has run. So a run that sets Django up collects them first, into one directory
(KANDEV_STATIC_ROOT, .kandev/test/staticfiles unless the environment names another) that every
Daphne, worker and manage.py the tests start inherits through the environment. The sources'
names, sizes and modification times are remembered beside the collected files: a run whose
sources did not change since the last collect reuses them.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.management import call_command

ROOT = Path(__file__).resolve().parent.parent.parent
DEFAULT_STATIC_ROOT = ROOT / ".kandev" / "test" / "staticfiles"
SOURCES_FILE = ".sources"


# Set when pytest loads this plugin (-p), before pytest-django reads the settings.
os.environ.setdefault("KANDEV_STATIC_ROOT", str(DEFAULT_STATIC_ROOT))


# Between pytest-django's own hook (tryfirst: it sets Django up) and pytest's (trylast: it imports
# the conftests, and some import the ASGI app, which refuses to start without collected files).
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    if settings.configured:
        static_collected()


def sources_fingerprint() -> str:
    """What collectstatic would read: every source file's name, size and modification time."""
    digest = hashlib.sha256(settings.STORAGES["staticfiles"]["BACKEND"].encode())
    found = []
    for finder in finders.get_finders():
        for path, storage in finder.list([]):
            stat = os.stat(storage.path(path))
            found.append(f"{storage.path(path)}\0{stat.st_size}\0{stat.st_mtime_ns}")
    for line in sorted(found):
        digest.update(line.encode() + b"\n")
    return digest.hexdigest()


def static_collected() -> Path:
    """STATIC_ROOT, holding what collectstatic writes from today's sources."""
    root = Path(settings.STATIC_ROOT)
    fingerprint = sources_fingerprint()
    kept = root / SOURCES_FILE
    if kept.is_file() and kept.read_text() == fingerprint:
        return root
    root.mkdir(parents=True, exist_ok=True)
    call_command("collectstatic", interactive=False, clear=True, verbosity=0)
    kept.write_text(fingerprint)
    return root
