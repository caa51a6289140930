"""Every distribution the code imports is declared in pyproject.toml, so the image (which installs
the project's dependencies and nothing of the dev group) never runs on a package that is only
there because something else happened to pull it in.

The product (kandev_web, sessions_app, recovery) may import only [project] dependencies; devtools
(`make run`'s and the tests' tooling) may import the dev group's too. Imports are read from the
source (devtools.importgraph) and mapped to the installed distribution that provides them.
"""

from __future__ import annotations

import re
import sys
import tomllib
from importlib.metadata import packages_distributions

import pytest

from devtools.importgraph import DEFAULT_ROOT, graph_read, top_level

PRODUCT = ("kandev_web", "sessions_app", "recovery")
TOOLING = ("devtools",)
PYPROJECT = tomllib.loads((DEFAULT_ROOT / "pyproject.toml").read_text())
GRAPH = graph_read(packages=(*PRODUCT, *TOOLING))
PROVIDERS = packages_distributions()


def normalised(name: str) -> str:
    """A distribution's name as PyPI compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(requirements: list[str]) -> set[str]:
    return {normalised(re.match(r"[A-Za-z0-9._-]+", item).group(0)) for item in requirements}


PROJECT_DEPENDENCIES = declared(PYPROJECT["project"]["dependencies"])
DEV_DEPENDENCIES = declared(PYPROJECT["dependency-groups"]["dev"])


def third_party_imports(packages: tuple[str, ...]) -> dict[str, str]:
    """Each third-party top-level name the packages import, with one place that imports it."""
    found: dict[str, str] = {}
    for item in GRAPH.imports:
        name = top_level(item.imported)
        if top_level(item.importer) not in packages or GRAPH.is_internal(item):
            continue
        if name in sys.stdlib_module_names or name in GRAPH.modules:
            continue
        found.setdefault(name, f"{item.path}:{item.line}")
    return found


def undeclared(packages: tuple[str, ...], allowed: set[str]) -> list[str]:
    missing = []
    for name, site in sorted(third_party_imports(packages).items()):
        providers = {normalised(dist) for dist in PROVIDERS.get(name, [])}
        if not providers:
            missing.append(f"{site} imports {name}, which no installed distribution provides")
        elif not providers & allowed:
            missing.append(f"{site} imports {name} from {', '.join(sorted(providers))}")
    return missing


def test_the_product_imports_only_distributions_its_dependencies_declare():
    assert undeclared(PRODUCT, PROJECT_DEPENDENCIES) == []


def test_the_dev_tooling_imports_only_declared_distributions():
    assert undeclared(TOOLING, PROJECT_DEPENDENCIES | DEV_DEPENDENCIES) == []


@pytest.mark.parametrize("name", ["kombu", "pydantic", "httpx2", "asgiref"])
def test_packages_that_came_in_through_another_dependency_are_seen_as_imports(name):
    assert name in third_party_imports(PRODUCT)


def test_an_import_nobody_declares_is_reported_with_its_site():
    assert undeclared(PRODUCT, PROJECT_DEPENDENCIES - {"kombu"}) == [
        f"{third_party_imports(PRODUCT)['kombu']} imports kombu from kombu"
    ]
