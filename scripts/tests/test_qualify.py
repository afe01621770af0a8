"""make qualify without running it: budget verdicts on recorded results
(PASS and FAIL), the scenario matrix and its time budget, the results
layout (one tiny real run), collection of scripts/qualify."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ptwalk_report import budgets as bud
from ptwalk_report import matrix
from ptwalk_report import results as res

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "results"
REPO = HERE.parents[1]
PTWALK = REPO / "build" / "ptwalk"
GIB = 1 << 30
MIB = 1 << 20


def _budgets(tmp: Path, budgets: list[dict]) -> Path:
    p = tmp / "b.json"
    p.write_text(json.dumps({"schema": "ptwalk.budgets/1", "budgets": budgets}))
    return p


def test_default_budgets_load_and_apply() -> None:
    bs = bud.load_budgets(REPO / "results" / "budgets" / "default.json")
    assert {b["check"] for b in bs} == set(bud.CHECKS)
    vs = bud.evaluate(bs, res.load([DATA / "a"]))
    assert {v.verdict for v in vs} <= {bud.PASS, bud.FAIL, bud.SKIP}
    assert any(v.budget == "walk-ns-per-entry[clear_refs]" for v in vs)


def test_budget_pass_with_figures() -> None:
    bs = [{"id": "ns", "check": "walk_ns_per_entry", "stat": "p50", "max": {"*": 1000}},
          {"id": "ok", "check": "complete"},
          {"id": "stall", "check": "stall_vs_walk", "factor": 3.0, "slack_ns": 50_000_000},
          {"id": "mmap", "check": "victim_during_quantile", "victim": "mmap",
           "quantile": "p99.9", "max_ns": 1_000_000_000}]
    vs = bud.evaluate(bs, res.load([DATA / "a"]))
    assert bud.overall(vs) == bud.PASS
    ns = next(v for v in vs if v.budget == "ns[clear_refs]")
    assert ns.figure.startswith("p50 ") and ns.figure.endswith("ns/entry over 45 walks")
    assert ns.limit == "<= 1000 ns/entry"
    assert "budgets: PASS" in bud.render(vs)


def test_budget_fail_with_figures() -> None:
    bs = [{"id": "ns", "check": "walk_ns_per_entry", "stat": "p50",
           "max": {"*": 1000, "smaps_rollup/anon": 10}},
          {"id": "mmap", "check": "victim_during_quantile", "victim": "mmap",
           "quantile": "p99", "max_ns": 1_000_000},
          {"id": "v", "check": "victim_during_vs_walk", "victims": ["mmap"], "quantile": "max",
           "factor": 0.0, "slack_ns": 0}]
    vs = bud.evaluate(bs, res.load([DATA / "a"]))
    assert bud.overall(vs) == bud.FAIL
    by = {(v.scenario.split("/")[0], v.budget): v for v in vs}
    assert by[("smaps_rollup", "ns[smaps_rollup]")].verdict == bud.FAIL
    assert by[("clear_refs", "ns[clear_refs]")].verdict == bud.PASS
    assert by[("clear_refs", "mmap")].verdict == bud.FAIL
    assert "ms" in by[("clear_refs", "mmap")].figure
    assert "budgets: FAIL" in bud.render(vs)


def test_budget_cli_summary_and_exit(tmp_path: Path) -> None:
    b = _budgets(tmp_path, [{"id": "mmap", "check": "victim_during_quantile", "victim": "mmap",
                             "quantile": "p99", "max_ns": 1_000_000}])
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    p = subprocess.run([sys.executable, "-m", "ptwalk_report.budgets", "--budgets", str(b),
                        "--summary", str(tmp_path / "s.json"), "--meta", "mode=quick",
                        str(DATA / "a")], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "FAIL  clear_refs/anon/128M/fault,mmap,read  mmap: mmap p99 during" in p.stdout
    assert "backend: tracepoint" in p.stdout
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["verdict"] == "FAIL" and s["backends"] == ["tracepoint"] and s["mode"] == "quick"


def test_stall_budget_skips_without_attribution() -> None:
    r = res.load([DATA / "a" / "clear_refs-anon-128M-1.json.gz"])[0]
    for w in r.doc["walks"]:
        w.pop("max_stall_ns", None)
    r.doc["backend"] = "syscall"
    vs = bud.evaluate([{"id": "s", "check": "stall_vs_walk", "factor": 1, "slack_ns": 0}], [r])
    assert [v.verdict for v in vs] == [bud.SKIP] and "syscall" in vs[0].detail


def test_bad_budgets_file(tmp_path: Path) -> None:
    with pytest.raises(res.InputError):
        bud.load_budgets(_budgets(tmp_path, [{"id": "x", "check": "no_such_check"}]))


def test_matrix_selection_fits_time_budgets() -> None:
    m = matrix.load_matrix()
    for mode in ("quick", "default"):
        every = matrix.select(m, mode, 20 * GIB)
        scs = [s for s in every if not s.incident and not s.sweep]
        assert len(scs) == 6 * 3 * m["modes"][mode]["repeats"]
        assert m["modes"][mode]["repeats"] >= 3
        assert {s.profile for s in scs} == {"cadvisor", "clear_refs", "smaps", "smaps_rollup",
                                            "pagemap", "pagemap_scan"}
        assert {s.backing for s in scs} == {"anon", "thp", "shmem"}
        assert all(s.victims == ("read", "fault", "mmap") for s in scs)
        inc = [s for s in every if s.incident]
        est = (matrix.estimate_s(m, mode, scs[0].size_mib, len(scs))
               + matrix.sweep_estimate_s(m, every)
               + (len(inc) * m["incident"]["estimate_s"] if inc else 0))
        assert est <= m["modes"][mode]["time_budget_s"] * 1.02, (mode, est)
    # the sweep takes its share first: the main size is what is left
    assert matrix.select(m, "default", 20 * GIB)[0].size_mib == 1024
    assert matrix.select(m, "quick", 20 * GIB)[0].size_mib == 128


@pytest.mark.parametrize("mode", ["quick", "default", "full"])
@pytest.mark.parametrize("avail_gib", [2, 20, 200])
def test_sweep_spans_two_decades_per_kind(mode: str, avail_gib: int) -> None:
    """Every walk kind runs over >= 2 decades of entries on distinct 4 KiB
    pages (entries counted conservatively: size / 4 KiB + the target's own
    base_entries), on a small host and a big one, in every mode."""
    m = matrix.load_matrix()
    scs = matrix.select(m, mode, avail_gib * GIB)
    span = matrix.entries_span(scs, m["sweep"]["base_entries"])
    kinds = {k for p in m["profiles"] for k in matrix.KINDS[p]}
    for k in kinds:
        assert span[(k, "anon")] >= 10 ** m["sweep"]["min_decades"], (k, span[(k, "anon")])
    assert m["sweep"]["min_decades"] >= 2
    sw = [s for s in scs if s.sweep]
    assert sw and all(s.backing == "anon" and s.repeat == 1 for s in sw)
    assert len({s.id for s in scs}) == len(scs)            # sweep ids never collide
    idx = [i for i, s in enumerate(scs) if s.sweep]        # spread between the main runs
    main = [i for i, s in enumerate(scs) if not s.sweep and not s.incident]
    assert idx[0] > main[0] and idx[0] < main[len(main) // 3] and idx[-1] > main[len(main) // 2]
    assert max(s.size_mib for s in sw) * MIB <= avail_gib * GIB * m["mem_fraction"]


def test_sweep_leaves_out_sizes_the_host_cannot_hold() -> None:
    m = matrix.load_matrix()
    assert matrix.sweep_sizes(m, "default", 20 * GIB) == [1, 16, 256, 4096]
    assert matrix.sweep_sizes(m, "default", 8 * GIB) == [1, 16, 256]


def test_matrix_size_adapts_to_host() -> None:
    m = matrix.load_matrix()
    assert matrix.select(m, "default", 2 * GIB)[0].size_mib == 512   # 25% of 2 GiB
    assert matrix.select(m, "default", 64 << 20)[0].size_mib == 16    # floor
    full = [s for s in matrix.select(m, "full", 200 * GIB) if not s.incident and not s.sweep]
    assert full[0].size_mib == 16384 and len(full) == 18 * 5


def test_mode_from_env() -> None:
    assert matrix.mode_from_env({}) == "default"
    assert matrix.mode_from_env({"QUICK": "1"}) == "quick"
    assert matrix.mode_from_env({"QUICK": "0"}) == "default"
    assert matrix.mode_from_env({"FULL": "1", "QUICK": "1"}) == "full"


def test_results_layout_and_argv() -> None:
    d = matrix.results_dir(Path("/r"), "host", "6.18.0", "20261121T000000Z")
    assert d == Path("/r/host/6.18.0/20261121T000000Z")
    sc = matrix.Scenario("cadvisor", "thp", 64, ("read", "fault", "mmap"), "100ms", 800, 2)
    assert sc.id == "cadvisor-thp-64M-r2"
    assert sc.argv("ptwalk", Path("x.json")) == [
        "ptwalk", "run", "--size", "64M", "--backing", "thp", "--scanner", "cadvisor",
        "--interval", "100ms", "--duration", "800ms", "--victims", "read,fault,mmap",
        "--quiet", "--out", "x.json"]


@pytest.mark.skipif(not PTWALK.exists(), reason="build/ptwalk not built")
@pytest.mark.skipif(os.geteuid() != 0, reason="ptwalk run needs root (tracefs, clear_refs)")
def test_tiny_real_run_layout(tmp_path: Path) -> None:
    out = matrix.results_dir(tmp_path / "results", "h", "rel", "ts")
    sc = matrix.Scenario("clear_refs", "anon", 16, ("read", "fault", "mmap"), "100ms", 300, 1)
    rc, path, err = matrix.run_scenario(sc, str(PTWALK), out)
    assert rc == 0, err
    assert path == tmp_path / "results/h/rel/ts/runs/clear_refs-anon-16M-r1.json"
    doc = json.loads(path.read_text())
    assert doc["complete"] and doc["backend"] in ("module", "tracepoint", "syscall")
    assert doc["scenario"]["victims"] == ["read", "fault", "mmap"]
    assert (out / "commands.txt").read_text().startswith(f"{PTWALK} run --size 16M")
    vs = bud.evaluate(bud.load_budgets(REPO / "results" / "budgets" / "default.json"),
                      res.load([out / "runs"]))
    assert vs and all(v.verdict in (bud.PASS, bud.FAIL, bud.SKIP, bud.INFO) for v in vs)


def test_qualify_collects_the_matrix(tmp_path: Path) -> None:
    env = dict(os.environ, QUICK="1", PTWALK_QUALIFY_OUT=str(tmp_path / "q"),
               PYTHONPATH=str(HERE.parent))
    env.pop("FULL", None)
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                        "-p", "no:cacheprovider", str(HERE.parent / "qualify")],
                       capture_output=True, text=True, env=env, timeout=60, cwd=REPO)
    assert p.returncode == 0, p.stdout + p.stderr
    ids = [x for x in p.stdout.splitlines() if "::" in x]
    assert sum("test_scenario[" in x for x in ids) == 54 + 10    # main + sweep
    assert "test_scenario[pagemap_scan-shmem-128M-r3]" in p.stdout
    assert "test_scenario[smaps-anon-512M-r1]" in p.stdout
    assert sum("test_budget[" in x for x in ids) == 6
    assert not (tmp_path / "q").exists()        # collecting runs nothing


def test_busy_periods_chain_back_to_back_walks() -> None:
    ms = 1_000_000
    walks = [{"start_ns": 0, "duration_ns": 10 * ms},          # alone
             {"start_ns": 100 * ms, "duration_ns": 30 * ms},   # overruns into the next
             {"start_ns": 130 * ms, "duration_ns": 20 * ms},
             {"start_ns": 150 * ms + ms // 2, "duration_ns": 5 * ms},  # 0.5 ms gap: chained
             {"start_ns": 300 * ms, "duration_ns": 1 * ms}]
    assert bud.busy_periods(walks, 1 * ms) == [10 * ms, 55.5 * ms, 55.5 * ms, 55.5 * ms, 1 * ms]
    assert bud.busy_periods(walks, 0)[3] == 5 * ms


def test_quantile_of_too_few_ops_is_skip_and_per_gib_limit() -> None:
    rs = res.load([DATA / "a"])
    b = [{"id": "q", "check": "victim_during_quantile", "victim": "mmap", "quantile": "p99.9",
          "max_ns_per_gib": 10_000_000, "slack_ns": 0}]
    vs = bud.evaluate(b, rs)       # 644 mmap ops during clear_refs walks: p99.9 is the max
    assert all(v.verdict == bud.SKIP for v in vs) and "needs >= 1000 ops" in vs[0].limit
    b[0]["quantile"] = "p99"
    v = bud.evaluate(b, rs)[0]
    assert v.limit == "<= 10ms/GiB x 0.125 GiB + 0ns = 1.25ms" and v.verdict == bud.FAIL


def test_cost_fit_budget_across_sizes(tmp_path: Path) -> None:
    """The walk-cost-fit budget: one verdict per kind and backing over every
    size; PASS on a recorded sweep, FAIL when walks grow with the square of
    the entries, SKIP (with the reason) when sizes span less than a decade."""
    import random
    from ptwalk_report import synthetic
    b = [{"id": "fit", "check": "cost_fit", "max_loglog_slope": 1.3,
          "max_ns_per_entry": {"*": 100_000}}]
    vs = bud.evaluate(b, res.load(sorted((DATA / "sizes").glob("*.json.gz"))))
    assert [(v.budget, v.scenario, v.verdict) for v in vs] == [
        ("fit[clear_refs]", "clear_refs/anon across sizes", bud.PASS)]
    assert "R² 0." in vs[0].figure and "x)" in vs[0].figure
    assert bud.evaluate([dict(b[0], r2_min=0.9999)], res.load(sorted(
        (DATA / "sizes").glob("*.json.gz"))))[0].verdict == bud.FAIL     # r2_min when set
    rng = random.Random(2)
    files = []
    for mib in (1, 8, 64, 512):
        n = mib * 256 + 700
        doc = synthetic.make_result(rng=rng, size_bytes=mib * MIB, ptes=n, walks=4,
                                    ns_per_pte=30.0 * n / 1000, spread=0.01)   # quadratic
        files.append(synthetic.write(doc, tmp_path / f"q-{mib}.json"))
    v = bud.evaluate(b, res.load(files))[0]
    assert v.verdict == bud.FAIL and "log-log slope 2.0" in v.figure, v.figure
    v = bud.evaluate(b, res.load([DATA / "a"]))
    assert {x.verdict for x in v} == {bud.SKIP} and "needs sizes spanning >= 10x" in v[0].detail


def test_ns_per_entry_budget_skips_the_sweeps_small_sizes(tmp_path: Path) -> None:
    import random
    from ptwalk_report import synthetic
    doc = synthetic.make_result(rng=random.Random(1), size_bytes=1 * MIB, ptes=900, walks=4,
                                ns_per_pte=4000.0)
    small = res.load([synthetic.write(doc, tmp_path / "s.json")])
    b = [{"id": "ns", "check": "walk_ns_per_entry", "stat": "p50", "max": {"*": 1000},
          "min_size_mib": 64}]
    v = bud.evaluate(b, small)[0]
    assert v.verdict == bud.SKIP and "walk-cost-fit" in v.detail
    assert bud.evaluate([dict(b[0], min_size_mib=0)], small)[0].verdict == bud.FAIL
    big = res.load([DATA / "a"])                # 128 MiB: still checked
    assert {x.verdict for x in bud.evaluate(b, big)} == {bud.PASS}
