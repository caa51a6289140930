"""The project's import graph, read from the source with ``ast``: nothing is imported or run.

    python -m devtools.importgraph              # this checkout
    python -m devtools.importgraph --root DIR   # another checkout (e.g. a `git worktree add`)

It prints (1) which top-level package imports which, (2) import cycles (strongly connected
components) between top-level packages, between the parts of each package (its first-level
modules and subpackages, such as ``recovery.catalogue`` and ``recovery.providers``) and between
single modules, and (3) every import placed inside a function, with its file and line.

Every static import counts, including those inside functions and under ``if TYPE_CHECKING:``:
both are dependencies, and moving an import into a function hides a cycle without removing it.
Imports by string (``importlib.import_module``, Django's settings) are not seen.

tests/unit/test_import_graph.py holds the layering in place with the same functions.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

PACKAGES: tuple[str, ...] = (
    "kandev_web",
    "sessions_app",
    "recovery",
    "devtools",
    "tests",
    "benchmarks",
)
DEFAULT_ROOT = Path(__file__).resolve().parent.parent
_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules"})
_SITES_SHOWN = 3


@dataclass(frozen=True, slots=True)
class Import:
    importer: str  # dotted name of the importing module (a package by its __init__)
    imported: str  # the project module it names, else the dotted name as written
    path: str  # the importing file, relative to the root
    line: int
    in_function: bool
    type_checking: bool  # under ``if TYPE_CHECKING:``

    @property
    def site(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True, slots=True)
class ImportGraph:
    modules: frozenset[str]
    packages: frozenset[str]  # the modules that are packages (an __init__.py)
    imports: tuple[Import, ...]

    def is_internal(self, item: Import) -> bool:
        return item.imported in self.modules


Edges = dict[tuple[str, str], list[Import]]


def under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def top_level(name: str) -> str:
    return name.split(".", 1)[0]


# ---- reading the tree ----------------------------------------------------------------------


def graph_read(root: Path = DEFAULT_ROOT, packages: Sequence[str] = PACKAGES) -> ImportGraph:
    files = dict(_module_files(root, packages))
    modules = frozenset(files)
    package_names = frozenset(name for name, path in files.items() if path.name == "__init__.py")
    imports: list[Import] = []
    for module, path in sorted(files.items()):
        tree = ast.parse(path.read_bytes(), filename=str(path))
        collector = _Collector(
            module=module,
            is_package=path.name == "__init__.py",
            path=path.relative_to(root).as_posix(),
            modules=modules,
        )
        collector.visit(tree)
        imports += collector.found
    return ImportGraph(modules=modules, packages=package_names, imports=tuple(imports))


def _module_files(root: Path, packages: Sequence[str]) -> Iterator[tuple[str, Path]]:
    for package in packages:
        base = root / package
        if not base.is_dir():
            continue
        for path in base.rglob("*.py"):
            relative = path.relative_to(root)
            if _SKIPPED_DIRS.intersection(relative.parts):
                continue
            parts = list(relative.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            yield ".".join(parts), path


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


class _Collector(ast.NodeVisitor):
    def __init__(self, *, module: str, is_package: bool, path: str, modules: frozenset[str]):
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.path = path
        self.modules = modules
        self.found: list[Import] = []
        self._functions = 0
        self._type_checking = 0

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._functions += 1
        self.generic_visit(node)
        self._functions -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            self.generic_visit(node)
            return
        self._type_checking += 1
        for child in node.body:
            self.visit(child)
        self._type_checking -= 1
        for child in node.orelse:
            self.visit(child)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = self._absolute(node)
        for alias in node.names:
            named = base if alias.name == "*" else f"{base}.{alias.name}".lstrip(".")
            self._add(named, node)

    def _absolute(self, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        parts = self.package.split(".") if self.package else []
        parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
        return ".".join([*parts, *([node.module] if node.module else [])])

    def _add(self, name: str, node: ast.stmt) -> None:
        imported = self._project_module(name) or name
        item = Import(
            importer=self.module,
            imported=imported,
            path=self.path,
            line=node.lineno,
            in_function=self._functions > 0,
            type_checking=self._type_checking > 0,
        )
        if item not in self.found:  # `from a import b, c` names module a once per line
            self.found.append(item)

    def _project_module(self, name: str) -> str | None:
        """The longest prefix of ``name`` that is a project module (the rest is an attribute)."""
        parts = name.split(".")
        for end in range(len(parts), 0, -1):
            candidate = ".".join(parts[:end])
            if candidate in self.modules:
                return candidate
        return None


# ---- questions the report and the tests ask ------------------------------------------------


def _kept(item: Import, package: str, exclude: Sequence[str]) -> bool:
    return under(item.importer, package) and not any(under(item.importer, e) for e in exclude)


def foreign_imports(
    graph: ImportGraph, package: str, forbidden: Iterable[str], *, exclude: Sequence[str] = ()
) -> list[Import]:
    """Imports under ``package`` (less ``exclude``) of any top-level name in ``forbidden``."""
    names = frozenset(forbidden)
    return [
        item
        for item in graph.imports
        if _kept(item, package, exclude) and top_level(item.imported) in names
    ]


def function_imports(
    graph: ImportGraph, package: str, *, exclude: Sequence[str] = ()
) -> list[Import]:
    """Imports placed inside a function, anywhere under ``package`` (less ``exclude``)."""
    return [item for item in graph.imports if item.in_function and _kept(item, package, exclude)]


def package_edges(graph: ImportGraph) -> Edges:
    """Imports from one top-level package into another, by (importer, imported) package."""
    edges: Edges = defaultdict(list)
    for item in graph.imports:
        if graph.is_internal(item):
            pair = (top_level(item.importer), top_level(item.imported))
            if pair[0] != pair[1]:
                edges[pair].append(item)
    return dict(edges)


def part_edges(graph: ImportGraph, package: str, *, exclude: Sequence[str] = ()) -> Edges:
    """Imports between the parts of ``package``: ``recovery.catalogue.rules`` is part
    ``recovery.catalogue``, ``recovery.classify`` is part ``recovery.classify``."""
    depth = len(package.split(".")) + 1

    def part(name: str) -> str:
        return ".".join(name.split(".")[:depth])

    edges: Edges = defaultdict(list)
    for item in _internal_under(graph, package, exclude):
        pair = (part(item.importer), part(item.imported))
        if pair[0] != pair[1]:
            edges[pair].append(item)
    return dict(edges)


def module_edges(graph: ImportGraph, package: str = "", *, exclude: Sequence[str] = ()) -> Edges:
    """Imports between single modules under ``package`` (every project module when empty)."""
    edges: Edges = defaultdict(list)
    for item in _internal_under(graph, package, exclude):
        if item.importer != item.imported:
            edges[(item.importer, item.imported)].append(item)
    return dict(edges)


def package_cycles(
    graph: ImportGraph, package: str, *, exclude: Sequence[str] = ()
) -> list[tuple[str, ...]]:
    """Every import cycle inside ``package``: between single modules, and between the parts of
    the package and of each of its subpackages, where a cycle between modules may hide."""
    found = cycles(module_edges(graph, package, exclude=exclude))
    for sub in _subpackages(graph, package, exclude):
        found += [c for c in cycles(part_edges(graph, sub, exclude=exclude)) if c not in found]
    return found


def _subpackages(graph: ImportGraph, package: str, exclude: Sequence[str]) -> list[str]:
    return sorted(
        name
        for name in graph.packages
        if under(name, package) and not any(under(name, e) for e in exclude)
    )


def _internal_under(graph: ImportGraph, package: str, exclude: Sequence[str]) -> Iterator[Import]:
    for item in graph.imports:
        if not graph.is_internal(item) or any(
            under(name, e) for name in (item.importer, item.imported) for e in exclude
        ):
            continue
        if not package or (under(item.importer, package) and under(item.imported, package)):
            yield item


def cycles(edges: Edges) -> list[tuple[str, ...]]:
    """The strongly connected components of more than one node, each sorted, largest first."""
    successors: dict[str, set[str]] = defaultdict(set)
    for importer, imported in edges:
        successors[importer].add(imported)
        successors.setdefault(imported, set())
    components = [tuple(sorted(c)) for c in _tarjan(successors) if len(c) > 1]
    return sorted(components, key=lambda c: (-len(c), c))


def _tarjan(successors: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative so that a deep chain cannot exhaust the stack."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in sorted(successors):
        if start in index:
            continue
        work = [(start, iter(sorted(successors[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(successors[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(component)
    return components


# ---- the report ----------------------------------------------------------------------------


def report(graph: ImportGraph, packages: Sequence[str] = PACKAGES) -> str:
    present = [p for p in packages if any(under(m, p) for m in graph.modules)]
    lines = ["== 1. Top-level packages (importer -> imported: import statements) =="]
    edges = package_edges(graph)
    for package in present:
        targets = sorted((b, len(items)) for (a, b), items in edges.items() if a == package)
        shown = ", ".join(f"{b} ({n})" for b, n in targets) or "nothing in the project"
        lines.append(f"{package} -> {shown}")
    lines.append("third-party, by package (the standard library left out):")
    for package in present:
        names = sorted(
            {
                top_level(item.imported)
                for item in graph.imports
                if under(item.importer, package) and not graph.is_internal(item)
            }
            - sys.stdlib_module_names
        )
        lines.append(f"  {package}: {', '.join(names) or '-'}")

    lines += ["", "== 2. Import cycles (strongly connected components) =="]
    lines.append("between top-level packages:")
    lines += _cycle_lines(edges)
    for package in present:
        lines.append(f"between the parts of {package} (and of each of its subpackages):")
        found = False
        for sub in _subpackages(graph, package, ()):
            edges_of_sub = part_edges(graph, sub)
            if cycles(edges_of_sub):
                found = True
                lines += [f"  in {sub}:", *(f"  {line}" for line in _cycle_lines(edges_of_sub))]
        if not found:
            lines.append("  none")
    lines.append("between modules (whole project):")
    lines += _cycle_lines(module_edges(graph))

    found = [item for item in graph.imports if item.in_function]
    lines += ["", f"== 3. Imports inside functions ({len(found)}) =="]
    for package in present:
        inside = [item for item in found if under(item.importer, package)]
        lines.append(f"{package}: {len(inside)}")
        lines += [f"  {item.site}  {item.imported}" for item in inside]
    return "\n".join(lines) + "\n"


def _cycle_lines(edges: Edges) -> list[str]:
    found = cycles(edges)
    if not found:
        return ["  none"]
    lines: list[str] = []
    for component in found:
        members = set(component)
        lines.append(f"  cycle of {len(component)}: {', '.join(component)}")
        for (a, b), items in sorted(edges.items()):
            if a in members and b in members:
                sites = ", ".join(item.site for item in items[:_SITES_SHOWN])
                more = f" (+{len(items) - _SITES_SHOWN} more)" if len(items) > _SITES_SHOWN else ""
                lines.append(f"    {a} -> {b}: {sites}{more}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m devtools.importgraph",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="the checkout to read")
    args = parser.parse_args(argv)
    sys.stdout.write(report(graph_read(args.root.resolve())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
