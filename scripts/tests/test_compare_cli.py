"""ptwalk-compare end to end: recorded results of this project's VM
(tests/data/results/{a,b}: the same scenarios run twice), injected shifts,
synthetic sets, bad input."""
from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from ptwalk_report import compare, synthetic
from ptwalk_report import results as res

DATA = Path(__file__).resolve().parent / "data" / "results"
TOOL = Path(__file__).resolve().parents[1] / "ptwalk-compare"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True,
                          timeout=60)


def test_recorded_aa_no_regression(tmp_path: Path) -> None:
    p = run(str(DATA / "a"), str(DATA / "b"), "--json", str(tmp_path / "c.json"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "overall: " in p.stdout and "REGRESSION" not in p.stdout
    assert "%stddev" in p.stdout and "%change" in p.stdout
    assert "verdict clear_refs/anon/128M/fault,mmap,read:" in p.stdout
    doc = json.loads((tmp_path / "c.json").read_text())
    assert doc["schema"] == "ptwalk.compare/1"
    assert {s["scenario"] for s in doc["scenarios"]} == {
        "clear_refs/anon/128M/fault,mmap,read", "smaps_rollup/anon/128M/fault,mmap,read"}
    rows = {r["metric"]: r for s in doc["scenarios"] for r in s["rows"]}
    assert rows["walk clear_refs ns/PTE"]["n_a"] == 45
    assert rows["mmap p99.9 during walks"]["pooled_a"] > 0


def _scaled_set(src: Path, dst: Path, factor: float) -> Path:
    for f in sorted(src.glob("*.json.gz")):
        synthetic.write(synthetic.scale_walks(synthetic.read(f), factor),
                        dst / f.name.replace(".gz", ""))
    return dst


# The recorded walks vary by ~65% (small mappings, a busy 2-vCPU VM): with
# 45 walks a side a 25% shift is not significant there (it is on synthetic
# data with 5% spread, test_compare_stats), so inject 50% and 100%.
@pytest.mark.parametrize("factor", [1.5, 2.0])
def test_recorded_with_injected_regression(tmp_path: Path, factor: float) -> None:
    b = _scaled_set(DATA / "a", tmp_path / "b", factor)
    p = run(str(DATA / "a"), str(b))
    assert p.returncode == 1, p.stdout + p.stderr
    assert "overall: REGRESSION" in p.stdout
    line = next(x for x in p.stdout.splitlines() if x.endswith("walk clear_refs ns/PTE (ns/PTE, per walk)"))
    assert f"*+{(factor - 1) * 100:.1f}%*" in line


def test_recorded_improvement_exits_zero(tmp_path: Path) -> None:
    b = _scaled_set(DATA / "a", tmp_path / "b", 0.6)
    p = run(str(DATA / "a"), str(b))
    assert p.returncode == 0 and "overall: IMPROVEMENT" in p.stdout, p.stdout


def _set(tmp: Path, name: str, seed: int, runs: int, **kw: float) -> Path:
    rng = random.Random(seed)
    for i in range(runs):
        synthetic.write(synthetic.make_result(rng=rng, **kw), tmp / name / f"r{i}.json")
    return tmp / name


def test_synthetic_ten_percent_shift_flagged_and_victim_metrics(tmp_path: Path) -> None:
    a = _set(tmp_path, "a", 1, 4, ns_per_pte=30.0, victim_ms=5.0)
    b = _set(tmp_path, "b", 2, 4, ns_per_pte=33.0, victim_ms=5.5)
    verdict, scs = compare.compare_sets(res.load([a]), res.load([b]))
    assert verdict == compare.REGRESSION
    rows = {r.metric: r for r in scs[0].rows}
    assert rows["walk clear_refs ns/PTE"].significant
    assert rows["walk clear_refs ns/PTE"].change_pct == pytest.approx(10.0, abs=2.0)
    assert rows["mmap p99 during walks"].n_a == 4


def test_fewer_than_three_runs_no_verdict(tmp_path: Path) -> None:
    a = _set(tmp_path, "a", 1, 2, walks=2)
    b = _set(tmp_path, "b", 2, 2, walks=1)
    p = run(str(a), str(b))
    assert p.returncode == 0
    assert "n<3: no verdict" in p.stdout and "overall: NO VERDICT" in p.stdout


def test_scenarios_on_one_side_only_and_incomplete_skipped(tmp_path: Path) -> None:
    a = _set(tmp_path, "a", 1, 3)
    b = _set(tmp_path, "b", 2, 3, backing="thp")
    rng = random.Random(5)
    synthetic.write(synthetic.make_result(rng=rng, complete=False), b / "broken.json")
    p = run(str(a), str(b))
    assert p.returncode == 0
    assert "(only in A)" in p.stdout and "(only in B)" in p.stdout
    assert "skipped incomplete or failed results" in p.stdout


@pytest.mark.parametrize("args,msg", [
    (["/nonexistent/a", "/nonexistent/b"], "no such file or directory"),
    (["ONLY_ONE"], "want A B"),
])
def test_bad_input_exit_2(args: list[str], msg: str) -> None:
    p = run(*args)
    assert p.returncode == 2
    assert msg in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_bad_json_and_wrong_schema(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "other.json").write_text('{"schema": "something/1"}')
    p = run(str(tmp_path / "bad.json"), str(DATA / "b"))
    assert p.returncode == 2 and "cannot read result" in p.stderr
    p = run(str(tmp_path / "other.json"), str(DATA / "b"))
    assert p.returncode == 2 and "schema" in p.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    p = run(str(empty), str(DATA / "b"))
    assert p.returncode == 2 and "no ptwalk.result/1 documents" in p.stderr


def test_bootstrap_reproducible_across_invocations(tmp_path: Path) -> None:
    p1 = run(str(DATA / "a"), str(DATA / "b"), "--json", str(tmp_path / "1.json"))
    p2 = run(str(DATA / "a"), str(DATA / "b"), "--json", str(tmp_path / "2.json"))
    assert p1.stdout == p2.stdout
    assert (tmp_path / "1.json").read_text() == (tmp_path / "2.json").read_text()


def test_lists_of_files_with_vs(tmp_path: Path) -> None:
    a = sorted(str(f) for f in (DATA / "a").glob("clear_refs-*.json.gz"))
    b = sorted(str(f) for f in (DATA / "b").glob("clear_refs-*.json.gz"))
    p = run(*a, "--vs", *b)
    assert p.returncode == 0, p.stderr
    assert "scenario clear_refs/anon/128M/fault,mmap,read   runs A=3 B=3" in p.stdout
    assert "smaps_rollup" not in p.stdout
