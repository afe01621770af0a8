"""make qualify without running it: budget verdicts on recorded results
(PASS and FAIL), the scenario matrix and its time budget, the results
layout (one tiny real run), collection of scripts/qualify."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ptwalk_report import budgets as bud
from ptwalk_report import matrix
from ptwalk_report import results as res
from ptwalk_report import synthetic, walk_kinds

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
    bs: list[dict[str, Any]]
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
    bs: list[dict[str, Any]]
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
    r = res.parse(r.path, r.doc)
    vs = bud.evaluate([{"id": "s", "check": "stall_vs_walk", "factor": 1, "slack_ns": 0}], [r])
    assert [v.verdict for v in vs] == [bud.SKIP] and "syscall" in vs[0].detail


def test_bad_budgets_file(tmp_path: Path) -> None:
    with pytest.raises(res.InputError):
        bud.load_budgets(_budgets(tmp_path, [{"id": "x", "check": "no_such_check"}]))
    bad: list[dict[str, Any]] = [{"victim": "sleep"}, {"victims": ["mmap", "sleep"]}]
    for b in bad:
        with pytest.raises(res.InputError, match="budget 'v': unknown victim 'sleep'"):
            bud.load_budgets(_budgets(tmp_path, [{"id": "v", "check": "victim_during_quantile",
                                                  "quantile": "p99", **b}]))


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
    """Every walk kind runs over >= 2 decades of entries on every backing of
    the matrix (4 KiB backings: size / 4 KiB + the target's own
    base_entries, counted conservatively; thp: PMD leaves), and aliased
    when the incident-scale runs are aliased, on a small host and a big
    one, in every mode."""
    m = matrix.load_matrix()
    scs = matrix.select(m, mode, avail_gib * GIB)
    span = matrix.entries_span(scs, m["sweep"]["base_entries"])
    kinds = {k for p in m["profiles"] for k in walk_kinds.profile_walks(p)}
    need = 10 ** m["sweep"]["min_decades"]
    assert set(m["sweep"]["backings"]) == set(m["backings"]) == {"anon", "shmem", "thp"}
    for k in kinds:
        for b in m["backings"]:
            if b == "thp" and mode == "quick":      # not judged there: see walk-cost-fit
                assert (k, b) not in span or span[(k, b)] == 1
                continue
            assert span[(k, b)] >= need, (k, b, span[(k, b)])
    inc = [s for s in scs if s.incident]
    if inc and inc[0].backing == "alias":
        for k in {k for p in m["incident"]["profiles"] for k in walk_kinds.profile_walks(p)}:
            assert span[(k, "alias")] >= need, (k, span[(k, "alias")])
    assert m["sweep"]["min_decades"] >= 2
    sw = [s for s in scs if s.sweep]
    assert sw and all(s.repeat == 1 for s in sw)
    assert all(s.size_mib >= 2 for s in sw if s.backing == "thp")   # a PMD leaf at least
    assert len({s.id for s in scs}) == len(scs)            # sweep ids never collide
    idx = [i for i, s in enumerate(scs) if s.sweep]        # spread between the main runs
    main = [i for i, s in enumerate(scs) if not s.sweep and not s.incident]
    assert idx[0] > main[0] and idx[0] < main[len(main) // 3] and idx[-1] > main[len(main) // 2]
    assert max(s.size_mib for s in sw if s.backing != "alias") * MIB <= \
        avail_gib * GIB * m["mem_fraction"]


def test_thp_span_counts_pmd_leaves() -> None:
    """thp entries are PMD leaves (2 MiB each), not size / 4 KiB: a 2 MiB
    to 256 MiB THP sweep spans 128x, the same sizes of anon far less."""
    sc = [matrix.Scenario("smaps", b, s, ("mmap",), "10ms", 100, 1)
          for b in ("thp", "anon") for s in (2, 256)]
    span = matrix.entries_span(sc, 1024)
    assert span[("smaps", "thp")] == 128
    assert span[("smaps", "anon")] < 50


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
    assert sum("test_scenario[" in x for x in ids) == 54 + 20    # main + sweep
    assert "test_scenario[pagemap_scan-shmem-128M-r3]" in p.stdout
    assert "test_scenario[smaps-anon-512M-r1]" in p.stdout
    assert "test_scenario[smaps-shmem-512M-r1]" in p.stdout
    assert "test_skip_fraction" in p.stdout
    assert sum("test_budget[" in x for x in ids) == 7   # default.json's budgets
    assert not (tmp_path / "q").exists()        # collecting runs nothing


def test_busy_periods_chain_back_to_back_walks() -> None:
    ms = 1_000_000
    walks = list(res.parse(Path("r.json"), synthetic.minimal([
        {"start_ns": 0, "duration_ns": 10 * ms},          # alone
        {"start_ns": 100 * ms, "duration_ns": 30 * ms},   # overruns into the next
        {"start_ns": 130 * ms, "duration_ns": 20 * ms},
        {"start_ns": 150 * ms + ms // 2, "duration_ns": 5 * ms},  # 0.5 ms gap: chained
        {"start_ns": 300 * ms, "duration_ns": 1 * ms}])).walks)
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
    vs = bud.evaluate(b, res.load([DATA / "a"]))
    assert {x.verdict for x in vs} == {bud.SKIP} and "needs sizes spanning >= 10x" in vs[0].detail


def _syn(tmp: Path, name: str, **kw) -> Path:
    import random
    from ptwalk_report import synthetic
    return synthetic.write(synthetic.make_result(rng=random.Random(len(name)), **kw),
                           tmp / f"{name}.json")


NS = [{"id": "ns", "check": "walk_ns_per_entry", "stat": "p50",
       "max": {"*": 1000, "pagemap_scan": 500}, "scope": {"min_entries": 16384}}]


def test_ns_per_entry_not_judged_where_fixed_cost_dominates(tmp_path: Path) -> None:
    """Below min_entries (the sweep's 1 MiB, any THP mapping: the process's
    own ~850 PTEs and ~100 VMAs) the fixed per-walk cost is the figure: no
    verdict at all (neither PASS nor SKIP); the recorded 128 MiB runs are
    still judged."""
    small = res.load([_syn(tmp_path, "s", size_bytes=1 * MIB, ptes=1100, walks=4,
                           ns_per_pte=4000.0)])
    assert bud.evaluate(NS, small) == []
    assert bud.evaluate([dict(NS[0], scope={})], small)[0].verdict == bud.FAIL
    # pagemap_scan on 128 MiB of THP: 64 leaves + 852 PTEs, 1.3 ms of ioctls
    thp = res.load([_syn(tmp_path, "t", profile="pagemap_scan", backing="thp",
                         size_bytes=128 * MIB, ptes=916, pmd_leaves=64, walks=8,
                         ns_per_pte=20.0, fixed_ns=1.3e6)])
    assert bud.evaluate(NS, thp) == []
    assert {x.verdict for x in bud.evaluate(NS, res.load([DATA / "a"]))} == {bud.PASS}


@pytest.mark.parametrize("kind,limit", [("clear_refs", 1000), ("pagemap_scan", 500)])
def test_ns_per_entry_still_fails_a_kernel_at_twice_the_limit(tmp_path: Path, kind: str,
                                                              limit: int) -> None:
    """The scope leaves the limits sharp: at the main size (128 MiB, 33,600
    entries) a kernel whose walks cost 2x the limit per entry, fixed cost
    included, FAILs; one at half of it PASSes."""
    for factor, want in ((2.0, bud.FAIL), (0.5, bud.PASS)):
        r = res.load([_syn(tmp_path, f"{kind}{factor}", profile=kind, size_bytes=128 * MIB,
                           ptes=33600, walks=8, ns_per_pte=limit * factor - 30,
                           fixed_ns=1e6)])
        vs = bud.evaluate(NS, r)
        assert [v.verdict for v in vs] == [want], bud.render(vs)


def _thp_sweep(tmp: Path, ns_per_leaf: float) -> list[res.Result]:
    files = []
    for mib in (2, 128, 256):
        leaves = mib // 2
        files.append(_syn(tmp, f"thp-{mib}-{ns_per_leaf}", profile="smaps", backing="thp",
                          size_bytes=mib * MIB, ptes=850 + leaves, pmd_leaves=leaves,
                          walks=4, ns_per_pte=ns_per_leaf * leaves / (850 + leaves),
                          spread=0.0, fixed_ns=400_000))
    return res.load(files)


def test_cost_fit_thp_fits_pmd_leaves(tmp_path: Path) -> None:
    """thp entries barely move with the size (the process's ~850 PTEs):
    walk-cost-fit fits THP walks against their PMD leaves, so a healthy
    sweep is judged (not SKIP) and a kernel at 2x the per-leaf limit
    FAILs."""
    b = [{"id": "fit", "check": "cost_fit", "max_loglog_slope": 1.3,
          "max_ns_per_entry": {"*": 1000}}]
    v = bud.evaluate(b, _thp_sweep(tmp_path, 300.0))
    assert [(x.scenario, x.verdict) for x in v] == [("smaps/thp across sizes", bud.PASS)], v
    assert "ns x PMD leaf" in v[0].figure and "1-128 PMD leaves (128x)" in v[0].figure
    v = bud.evaluate(b, _thp_sweep(tmp_path, 2000.0))
    assert v[0].verdict == bud.FAIL and "ns/PMD leaf" in v[0].limit, v[0]
    # below thp_min_pmd_leaves (largest run: 128 leaves) no verdict at all
    assert bud.evaluate([dict(b[0], scope={"thp_min_pmd_leaves": 512})],
                        _thp_sweep(tmp_path, 2000.0)) == []
    assert bud.evaluate([dict(b[0], scope={"thp_min_pmd_leaves": 128})],
                        _thp_sweep(tmp_path, 2000.0))[0].verdict == bud.FAIL


def _scoped(b: dict, rs: list[res.Result]) -> tuple[list[bud.Verdict], list]:
    scoped: list = []
    return bud.evaluate([b], rs, scoped), scoped


def test_scope_by_lock_unit_read_from_the_result(tmp_path: Path) -> None:
    b = {"id": "q", "check": "victim_during_quantile", "victim": "mmap", "quantile": "p99",
         "max_ns": 10**9, "scope": {"lock_units": ["pmd_chunk", "vma_per_call"]}}
    whole = res.load([_syn(tmp_path, "w", lock_unit="whole_walk", during_ops=500)])
    vs, scoped = _scoped(b, whole)
    assert vs == [] and len(scoped) == 1 and "whole_walk" in scoped[0][2]
    chunk = res.load([_syn(tmp_path, "c", profile="pagemap", lock_unit="pmd_chunk",
                           during_ops=500)])
    assert [v.verdict for v in _scoped(b, chunk)[0]] == [bud.PASS]
    # a result that does not say how its walks lock is judged, never hidden
    unsaid = res.load([_syn(tmp_path, "u", during_ops=500)])
    assert [v.verdict for v in _scoped(b, unsaid)[0]] == [bud.PASS]
    # cadvisor: every kind must be in scope (its clear_refs is whole_walk)
    r = res.load([DATA / "a"])
    assert all(x.stall_estimate is None or x.stall_estimate.kinds for x in r)


def test_scope_by_profile_backing_and_planned_walks(tmp_path: Path) -> None:
    b = {"id": "q", "check": "victim_during_quantile", "victim": "mmap", "quantile": "p99",
         "max_ns": 10**9}
    one = res.load([_syn(tmp_path, "one", interval_ns=20_000_000, duration_ns=200_000_000,
                         during_ops=500)])                       # 10 planned walks
    assert _scoped(dict(b, scope={"min_walks": 100}), one)[0] == []
    three = res.load([_syn(tmp_path, f"r{i}", interval_ns=15_000_000,
                           duration_ns=600_000_000, during_ops=500) for i in range(3)])
    assert bud.planned_walks(three) == 120
    assert [v.verdict for v in _scoped(dict(b, scope={"min_walks": 100}), three)[0]] == [
        bud.PASS]
    _, why = _scoped(dict(b, scope={"backings": ["thp"]}), one)
    assert why and "backing anon" in why[0][2]
    _, why = _scoped(dict(b, scope={"profiles": ["smaps"]}), one)
    assert why and "profile clear_refs" in why[0][2]
    _, why = _scoped(dict(b, scope={"min_size_mib": 2048}), one)     # 1 GiB
    assert why and "1024 MiB < 2048 MiB" in why[0][2]
    # without a scope, too few ops is still a SKIP that says why
    v = bud.evaluate([dict(b, quantile="p99.9")], one)
    assert v[0].verdict == bud.SKIP and "needs >= 1000 ops" in v[0].limit


# How each walk kind holds mmap_lock (ptwalk's table, in results as
# stall_estimate.kinds.KIND.lock_unit) and the fewest mmap ops per walk a
# writer victim got under it in QUICK qualify runs on the 2-vCPU
# development host (whole_walk 2.1, vma_when_contended 1.4, read_chunk 11.8,
# pmd_chunk 14.9, vma_per_call 13.9): the model of a qualify plan's results
# below takes less than these. THP walks of those two (0.1-0.5 ms) can be
# shorter than the writer's pace: 0.4-0.75 ops per walk measured (51-90
# over 120 walks), hence THP_SHORT. The fault victim (>= 2 per walk) and
# cadvisor's mmap victim (two walks per iteration: 2.3 per iteration on
# thp) do better.
LOCK = {"clear_refs": ("whole_walk", 1), "smaps_rollup": ("vma_when_contended", 1),
        "smaps": ("read_chunk", 5), "pagemap": ("pmd_chunk", 10),
        "pagemap_scan": ("vma_per_call", 10)}
THP_SHORT = {"whole_walk": 0.4, "vma_when_contended": 0.4}


def _plan_results(tmp: Path, mode: str) -> list[res.Result]:
    """One synthetic result per scenario of the mode's plan on a 20 GiB
    host: the planned walks, entries as the backing has them, the mmap and
    fault victims' ops during walks at the model's floor."""
    import random
    from ptwalk_report import synthetic
    m = matrix.load_matrix()
    rng = random.Random(5)
    out = []
    for sc in matrix.select(m, mode, 20 * GIB):
        walks = max(1, sc.duration_ms * 1_000_000 // res_interval_ns(sc.interval))
        kind = walk_kinds.profile_walks(sc.profile)[-1]
        unit, per_walk = LOCK[kind]
        leaves = sc.size_mib // 2 if sc.backing == "thp" else None
        ptes = 850 + (leaves if leaves is not None else sc.size_mib * 256)
        doc = synthetic.make_result(
            rng=rng, profile=kind, backing=sc.backing, size_bytes=sc.size_mib * MIB,
            ptes=ptes, walks=int(walks), ns_per_pte=60.0, spread=0.01, fixed_ns=500_000,
            pmd_leaves=leaves, lock_unit=unit, interval_ns=res_interval_ns(sc.interval),
            duration_ns=sc.duration_ms * 1_000_000,
            during_ops=int(walks * (2 if sc.profile == "cadvisor" else
                                    THP_SHORT.get(unit, per_walk) if sc.backing == "thp"
                                    else per_walk)),
            victim_ms=0.5)
        doc["scenario"]["profile"] = sc.profile
        if sc.profile == "cadvisor":            # whole_walk clear_refs + read_chunk smaps
            doc["stall_estimate"]["kinds"]["smaps"] = {"lock_unit": "read_chunk"}
        fault = synthetic.make_result(rng=rng, walks=1, during_ops=int(walks) * 2,
                                      victim_ms=0.5)
        doc["victims"]["fault"] = fault["victims"]["mmap"]
        out.append(synthetic.write(doc, tmp / f"{sc.id}.json"))
    return res.load(out)


def res_interval_ns(t: str) -> int:
    return int(float(t[:-2]) * 1_000_000) if t.endswith("ms") else int(float(t[:-1]) * 10**9)


@pytest.mark.parametrize("mode", ["quick", "default"])
def test_plan_skip_fraction_at_most_5_percent(tmp_path: Path, mode: str) -> None:
    """Quiet on a healthy host: over a model of the plan's results (walks
    and victims' ops as planned, ops per walk at the floor measured for
    each lock unit), at most 5% of the default budgets' verdicts SKIP."""
    rs = _plan_results(tmp_path, mode)
    scoped: list = []
    vs = bud.evaluate(bud.load_budgets(REPO / "results" / "budgets" / "default.json"), rs,
                      scoped)
    skips = [v for v in vs if v.verdict == bud.SKIP]
    assert len(vs) > 100 and scoped
    assert bud.skip_fraction(vs) <= 0.05, bud.render(skips)
    assert all(v.detail for v in skips)             # each says why
    # the budgets do judge each backing's cost across sizes and the victims
    fits = {v.scenario for v in vs if v.budget.startswith("walk-cost-fit")}
    backings = ("anon", "shmem") + (("thp",) if mode == "default" else ())
    assert {f"smaps/{b} across sizes" for b in backings} <= fits, fits
    p999 = [v for v in vs if v.budget == "mmap-p99.9-during"]
    if mode == "default":
        assert p999 and {v.verdict for v in p999} == {bud.PASS}
        assert {v.scenario.split("/")[0] for v in p999} == {"pagemap", "pagemap_scan"}
    assert any(v.budget.startswith("victim-p99-within-walk") and "clear_refs/" in v.scenario
               for v in vs)


def test_skip_fraction() -> None:
    v = [bud.Verdict("a", "s", bud.PASS, "", ""), bud.Verdict("b", "s", bud.SKIP, "", "")]
    assert bud.skip_fraction(v) == 0.5 and bud.skip_fraction([]) == 0.0
    assert "skip = 50.0%" in bud.render(v)
