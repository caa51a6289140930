"""A pytest plugin (pytest.ini loads it with -p) that decides whether a run needs Django.

The library's own tests (LIBRARY_TESTS) need no Django, database or Redis: a run that selects
only them (`make test-unit`, `pytest tests/unit/recovery`) never loads the settings. Any other run
gets DJANGO_SETTINGS_MODULE, and pytest-django sets Django up from it before any conftest is
imported, exactly as it would from pytest.ini; those tests run against the real PostgreSQL and
Redis named by DATABASE_URL and REDIS_URL (`make test` starts embedded ones when neither is set).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent
LIBRARY_TESTS = (TESTS / "unit" / "recovery", TESTS / "unit" / "acp")


# A wrapper, so this runs before pytest-django's own hook reads DJANGO_SETTINGS_MODULE.
@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> Iterator[None]:
    if not only_library_tests(early_config):
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kandev_web.settings")
    return (yield)


def only_library_tests(config: pytest.Config) -> bool:
    """Whether every path the run selects lies in the library's tests."""
    given = config.known_args_namespace.file_or_dir
    if given:
        base, paths = config.invocation_params.dir, [arg.split("::")[0] for arg in given]
    else:
        base, paths = config.rootpath, config.getini("testpaths")
    selected = [Path(base, path).resolve() for path in paths]
    return all(any(path.is_relative_to(lib) for lib in LIBRARY_TESTS) for path in selected)
