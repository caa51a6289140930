"""docs/ARCHITECTURE.md stays true and complete, read from the source (nothing is imported).

Every module path the page names (``sessions_app/agent/turn.py``) must exist, every dotted name
it gives in backticks under a product package (``services.lifecycle.generation_end``, with or
without the package in front) must be a module, or a name defined at the top of one, and every
product module must be on the page. A rename that forgets the map fails here.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAP = ROOT / "docs" / "ARCHITECTURE.md"
PRODUCT = ("kandev_web", "sessions_app", "recovery")
# Folders of the product that hold no modules of their own worth a line: migrations are
# Django's history, and recorded fixtures are data.
LEFT_OFF = ("migrations",)

PATH_RE = re.compile(r"(?<![\w/.])((?:[\w-]+/)+[\w-]+\.(?:py|sh|js|html|md|json|toml))\b")
CODE_RE = re.compile(r"`([^`\n]+)`")
DOTTED_RE = re.compile(r"^[a-z_][\w]*(?:\.[A-Za-z_]\w*)+$")


def map_text() -> str:
    return MAP.read_text(encoding="utf-8")


def product_modules() -> list[str]:
    modules = []
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if path.name == "__init__.py" or any(part in LEFT_OFF for part in relative.parts):
                continue
            modules.append(relative.as_posix())
    return modules


def named_paths(text: str) -> list[str]:
    return sorted(set(PATH_RE.findall(text)))


@cache
def top_level_names(path: Path) -> frozenset[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.TypeAlias):
            names.add(node.name.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return frozenset(names)


def dotted_resolves(dotted: str) -> bool:
    """``a.b.c`` is a module (a.b.c.py or a/b/c/__init__.py), or a module followed by one or two
    names (a function, a class, a class's attribute) defined at its top level. A name may leave
    its package off (``services.ladder``): it is then looked up in every product package."""
    parts = dotted.split(".")
    roots = [()] if parts[0] in PRODUCT else [(package,) for package in PRODUCT]
    for root in roots:
        full = (*root, *parts)
        for cut in range(len(full), 0, -1):
            base = ROOT.joinpath(*full[:cut])
            module = base.with_suffix(".py") if not base.is_dir() else base / "__init__.py"
            if not module.is_file():
                continue
            rest = full[cut:]
            if not rest or rest[0] in top_level_names(module):
                return True
            break
    return False


def named_dotted(text: str) -> list[str]:
    """Backticked dotted names that start with a product package or one of its sub-packages or
    modules (``services.queue``, ``agent.runner.generation_run``): those must resolve."""
    firsts = set(PRODUCT)
    for package in PRODUCT:
        for child in (ROOT / package).iterdir():
            if child.suffix == ".py" or (child / "__init__.py").is_file():
                firsts.add(child.stem)
    names = set()
    for code in CODE_RE.findall(text):
        code = code.removesuffix("()")
        if PATH_RE.fullmatch(code) or code.endswith((".py", ".sh", ".js", ".html")):
            continue
        if DOTTED_RE.match(code) and code.split(".")[0] in firsts:
            names.add(code)
    return sorted(names)


def test_every_path_the_map_names_exists():
    missing = [path for path in named_paths(map_text()) if not (ROOT / path).exists()]

    assert missing == []


def test_every_dotted_name_the_map_gives_resolves():
    unresolved = [name for name in named_dotted(map_text()) if not dotted_resolves(name)]

    assert unresolved == []


def test_every_product_module_is_on_the_map():
    named = set(named_paths(map_text()))

    assert [module for module in product_modules() if module not in named] == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("`recovery/nowhere.py` holds", ["recovery/nowhere.py"]),
        ("see sessions_app/agent/turn.py, then", ["sessions_app/agent/turn.py"]),
    ],
)
def test_a_path_in_prose_is_read_as_a_path(text, expected):
    assert named_paths(text) == expected


def test_a_name_that_is_not_there_does_not_resolve():
    assert dotted_resolves("sessions_app.agent.turn.Turn")
    assert not dotted_resolves("sessions_app.agent.turn.NoSuchThing")
    assert not dotted_resolves("services.no_such_module")
