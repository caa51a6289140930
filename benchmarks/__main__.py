"""`make bench`: run every benchmarks/bench_*.py module's `run()` and print one table.

    python -m benchmarks                      # all of them
    python -m benchmarks bench_guard ...      # only these

A module's `run()` returns a list of dicts. The preferred row is
    {"metric": str, "value": number | str, "target": str, "ok": bool}   (+ optional "benchmark")
Rows of other shapes are still shown: their "name" becomes the metric and their other fields
the value. A module that fails to import or raises is one `error` row, never a crash, and the
exit code is 1 when any module errored or any row missed its target.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "benchmarks"
COLUMNS = ("benchmark", "metric", "value", "target", "ok")
_RESERVED = {"benchmark", "metric", "name", "value", "target", "ok"}


@dataclass(frozen=True, slots=True)
class Row:
    benchmark: str
    metric: str
    value: str
    target: str
    ok: bool | None  # None: the module gave no verdict

    @property
    def failed(self) -> bool:
        return self.ok is False

    def cells(self) -> tuple[str, ...]:
        verdict = {True: "yes", False: "NO", None: "-"}[self.ok]
        return (self.benchmark, self.metric, self.value, self.target, verdict)


def bench_modules(*, package: str = PACKAGE, only: Sequence[str] = ()) -> list[str]:
    """Dotted names of the package's bench_* modules, sorted; `only` picks by short name."""
    path = Path(importlib.import_module(package).__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(path)]) if m.name.startswith("bench_"))
    if only:
        unknown = sorted(set(only) - set(names))
        if unknown:
            raise SystemExit(
                f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(names)}"
            )
        names = [name for name in names if name in only]
    return [f"{package}.{name}" for name in names]


def _show(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def rows_from(module_name: str, raw_rows: Iterable[dict]) -> list[Row]:
    short = module_name.rsplit(".", 1)[-1].removeprefix("bench_")
    rows = []
    for raw in raw_rows:
        benchmark = str(raw.get("benchmark") or short)
        if "metric" in raw:
            metric, value = str(raw["metric"]), _show(raw.get("value", ""))
        else:
            metric = str(raw.get("name", ""))
            value = " ".join(f"{k}={_show(v)}" for k, v in raw.items() if k not in _RESERVED)
        ok = raw.get("ok")
        rows.append(
            Row(
                benchmark,
                metric,
                value,
                _show(raw.get("target", "")),
                ok if isinstance(ok, bool) else None,
            )
        )
    return rows


def run_module(module_name: str) -> list[Row]:
    short = module_name.rsplit(".", 1)[-1].removeprefix("bench_")
    try:
        run: Callable[[], list[dict]] = importlib.import_module(module_name).run
        return rows_from(module_name, run())
    except Exception as error:  # noqa: BLE001 - one broken benchmark must not hide the others
        traceback.print_exc(file=sys.stderr)
        message = f"{type(error).__name__}: {error}".splitlines()[0][:120]
        return [Row(short, "error", message, "", False)]


def table(rows: Sequence[Row]) -> str:
    grid = [COLUMNS, *(row.cells() for row in rows)]
    widths = [max(len(line[i]) for line in grid) for i in range(len(COLUMNS))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in grid
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None, *, package: str = PACKAGE) -> int:
    only = list(sys.argv[1:] if argv is None else argv)
    rows: list[Row] = []
    for module_name in bench_modules(package=package, only=only):
        print(f"running {module_name} ...", file=sys.stderr, flush=True)
        rows.extend(run_module(module_name))
    print(table(rows) if rows else "no benchmarks found")
    return 1 if any(row.failed for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
