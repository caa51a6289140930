"""No product module grows past 400 lines (read from the source, nothing is imported).

A module that long holds more than one responsibility and is hard to read whole; the answer is a
split by responsibility, not a raised limit. The catalogue's rule table is the one exception: it
is data, one rule after another, and splitting it would only scatter the table.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("kandev_web", "sessions_app", "recovery")
LIMIT = 400
# Django's migration history is generated, and the rule table is data (see the docstring).
LEFT_OFF_FOLDERS = ("migrations",)
LEFT_OFF_FILES = ("recovery/catalogue/rules.py",)


def line_count(path: Path) -> int:
    with path.open(encoding="utf-8") as handle:
        return sum(1 for _ in handle)


def oversized(root: Path, *, limit: int = LIMIT) -> list[str]:
    """``path: N lines`` for each product module under ``root`` longer than ``limit``."""
    found = []
    for package in PRODUCT:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root)
            if any(part in LEFT_OFF_FOLDERS for part in relative.parts):
                continue
            if relative.as_posix() in LEFT_OFF_FILES:
                continue
            lines = line_count(path)
            if lines > limit:
                found.append(f"{relative.as_posix()}: {lines} lines")
    return found


def test_no_product_module_is_over_the_limit():
    assert oversized(ROOT) == []


def test_a_long_module_is_named_and_the_exceptions_are_not(tmp_path):
    (tmp_path / "recovery" / "catalogue").mkdir(parents=True)
    (tmp_path / "sessions_app" / "migrations").mkdir(parents=True)
    (tmp_path / "kandev_web").mkdir()
    long = "x = 1\n" * (LIMIT + 1)
    (tmp_path / "kandev_web" / "long.py").write_text(long, encoding="utf-8")
    (tmp_path / "kandev_web" / "short.py").write_text("x = 1\n" * LIMIT, encoding="utf-8")
    (tmp_path / "recovery" / "catalogue" / "rules.py").write_text(long, encoding="utf-8")
    (tmp_path / "sessions_app" / "migrations" / "0001_initial.py").write_text(long, "utf-8")

    assert oversized(tmp_path) == [f"kandev_web/long.py: {LIMIT + 1} lines"]
