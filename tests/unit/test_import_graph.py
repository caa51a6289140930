"""The layering holds, read from the source by devtools.importgraph (nothing is imported).

recovery/ is a plain library: it imports no Django and no app code. Dependencies point one way,
kandev_web -> sessions_app -> recovery, and nothing in the product imports devtools, tests or
benchmarks. No product package has an import cycle (between modules or between its parts) or
places an import inside a function (where one would only hide a cycle).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from devtools.importgraph import (
    cycles,
    foreign_imports,
    function_imports,
    graph_read,
    package_cycles,
    package_edges,
    report,
    under,
)

# package -> (top-level names it must never import, parts of it left out)
PLAIN_LIBRARIES = {
    # recovery holds no test-only code: test support lives under tests/.
    "recovery": (("django", "sessions_app", "kandev_web", "devtools", "tests", "benchmarks"), ()),
    # The product never imports its dev and test tooling, and the app never the project package.
    "sessions_app": (("kandev_web", "devtools", "tests", "benchmarks"), ()),
    "kandev_web": (("devtools", "tests", "benchmarks"), ()),
}
PRODUCT = ("recovery", "sessions_app", "kandev_web")
WITHOUT_CYCLES = {package: () for package in PRODUCT}
WITHOUT_FUNCTION_IMPORTS = {package: () for package in PRODUCT}

GRAPH = graph_read()


def sites(imports) -> list[str]:
    return [f"{item.site} imports {item.imported}" for item in imports]


@pytest.mark.parametrize("package", sorted(PLAIN_LIBRARIES))
def test_a_package_imports_nothing_it_must_not(package):
    forbidden, left_out = PLAIN_LIBRARIES[package]

    assert sites(foreign_imports(GRAPH, package, forbidden, exclude=left_out)) == []


def test_the_top_level_packages_depend_on_each_other_one_way_only():
    assert cycles(package_edges(GRAPH)) == []


@pytest.mark.parametrize("package", sorted(WITHOUT_CYCLES))
def test_a_package_has_no_import_cycle(package):
    assert package_cycles(GRAPH, package, exclude=WITHOUT_CYCLES[package]) == []


@pytest.mark.parametrize("package", sorted(WITHOUT_FUNCTION_IMPORTS))
def test_a_package_places_no_import_inside_a_function(package):
    left_out = WITHOUT_FUNCTION_IMPORTS[package]

    assert sites(function_imports(GRAPH, package, exclude=left_out)) == []


# A driver only reports (sessions_app/agent/reports.py): what acts on the session, the Turn, its
# rows and writer, the services, is out of its reach.
DRIVERS = ("sessions_app.agent.direct", "sessions_app.agent.acp")
ACTORS = (
    "sessions_app.agent.turn",
    "sessions_app.agent.rows",
    "sessions_app.agent.coalescer",
    "sessions_app.services",
)


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_driver_imports_nothing_that_acts_on_the_session(driver):
    acting = [
        item
        for item in GRAPH.imports
        if item.importer == driver and any(under(item.imported, actor) for actor in ACTORS)
    ]

    assert driver in GRAPH.modules
    assert sites(acting) == []


# ---- the checker itself finds what it must, on a small tree written for the purpose ------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    files = {
        "lib/__init__.py": "",
        "lib/a.py": "from lib import b\n",
        "lib/b.py": "def late():\n    from lib.a import x\n",
        "lib/c.py": (
            "from typing import TYPE_CHECKING\n"
            "import django.db\n"
            "if TYPE_CHECKING:\n"
            "    from lib.sub.d import D\n"
        ),
        "lib/sub/__init__.py": "",
        "lib/sub/d.py": "from ..c import thing\n",
        "app/__init__.py": "",
        "app/views.py": "from lib.a import x\n",
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def test_the_checker_sees_cycles_through_function_and_type_checking_imports(tree):
    graph = graph_read(tree, packages=("lib", "app"))

    # Modules a <-> b (through a function), c <-> sub.d (under TYPE_CHECKING); parts c <-> sub.
    assert package_cycles(graph, "lib") == [
        ("lib.a", "lib.b"),
        ("lib.c", "lib.sub.d"),
        ("lib.c", "lib.sub"),
    ]
    assert package_cycles(graph, "lib", exclude=("lib.b", "lib.sub")) == []


def test_the_checker_reports_function_imports_and_foreign_imports_by_file_and_line(tree):
    graph = graph_read(tree, packages=("lib", "app"))

    assert sites(function_imports(graph, "lib")) == ["lib/b.py:2 imports lib.a"]
    assert sites(foreign_imports(graph, "lib", ("django",))) == ["lib/c.py:2 imports django.db"]
    assert sorted(package_edges(graph)) == [("app", "lib")]


def test_the_report_names_the_cycles_and_the_function_imports(tree):
    text = report(graph_read(tree, packages=("lib", "app")), packages=("lib", "app"))

    assert "app -> lib (1)" in text
    assert "cycle of 2: lib.a, lib.b" in text
    assert "lib/b.py:2  lib.a" in text
