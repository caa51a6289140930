"""`make bench`: every bench_* module of the package runs; one table; failures are rows."""

from __future__ import annotations

import sys
import textwrap

import pytest

from benchmarks.__main__ import Row, bench_modules, main, rows_from, table

MODULES = {
    "bench_alpha.py": """
        def run():
            return [{"metric": "p99 latency (ms)", "value": 12.3456, "target": "< 150", "ok": True}]
    """,
    "bench_beta.py": """
        def run():
            return [{"name": "classify prose", "n": 1000, "p50_us": 3.25, "p99_us": 7.5,
                     "target": "p99 < 50 us"}]
    """,
    "bench_broken.py": """
        def run():
            raise RuntimeError("provider mock did not start")
    """,
    "bench_missed.py": """
        def run():
            return [{"benchmark": "fanout", "metric": "throughput vs baseline", "value": 0.61,
                     "target": ">= 0.80", "ok": False}]
    """,
    "bench_unimportable.py": "import a_module_that_does_not_exist\n",
    "helpers.py": "raise AssertionError('not a benchmark: must not be imported')\n",
}


@pytest.fixture
def bench_package(tmp_path, monkeypatch):
    package = tmp_path / "opsbench"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name, source in MODULES.items():
        (package / name).write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "opsbench"
    for name in [m for m in sys.modules if m == "opsbench" or m.startswith("opsbench.")]:
        del sys.modules[name]


def test_it_discovers_only_the_bench_modules_in_order(bench_package):
    assert bench_modules(package=bench_package) == [
        "opsbench.bench_alpha",
        "opsbench.bench_beta",
        "opsbench.bench_broken",
        "opsbench.bench_missed",
        "opsbench.bench_unimportable",
    ]


def test_it_prints_one_table_with_a_row_per_result_and_errors_as_rows(bench_package, capsys):
    code = main([], package=bench_package)

    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["benchmark", "metric", "value", "target", "ok"]
    body = "\n".join(lines[2:])
    assert "alpha" in body and "p99 latency (ms)" in body and "12.35" in body
    assert "classify prose" in body and "n=1000 p50_us=3.25 p99_us=7.5" in body
    broken = next(line for line in lines if line.startswith("broken"))
    assert broken.split()[1:] == [
        "error",
        "RuntimeError:",
        "provider",
        "mock",
        "did",
        "not",
        "start",
        "NO",
    ]
    assert "ModuleNotFoundError: No module named 'a_module_that_does_not_exist'" in body
    assert "fanout" in body and "NO" in body
    assert code == 1  # an error and a missed target


def test_it_exits_zero_when_every_chosen_benchmark_meets_its_target(bench_package, capsys):
    assert main(["bench_alpha", "bench_beta"], package=bench_package) == 0
    out = capsys.readouterr().out
    assert "broken" not in out and "fanout" not in out


def test_it_refuses_an_unknown_benchmark_name(bench_package):
    with pytest.raises(SystemExit, match="unknown benchmark"):
        main(["bench_nope"], package=bench_package)


def test_rows_without_a_verdict_show_a_dash_and_do_not_fail():
    rows = rows_from("benchmarks.bench_beta", [{"name": "x", "p99_us": 1.25}])
    assert rows == [Row("beta", "x", "p99_us=1.25", "", None)]
    assert not rows[0].failed
    assert table(rows).splitlines()[-1].split() == ["beta", "x", "p99_us=1.25", "-"]
