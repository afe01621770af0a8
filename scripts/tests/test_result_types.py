# SPDX-License-Identifier: GPL-2.0
"""The typed reader of ptwalk.result/1 (ptwalk_report/result_types.py):
recorded results parse, every member holds the value the JSON has, an
absent member stays None (never 0), and a malformed document or an
unknown enumeration value is one ResultError naming the file and the
member, which the tools print on one line."""
from __future__ import annotations

import copy
import dataclasses
import enum
import gzip
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ptwalk_report import SCHEMA, synthetic
from ptwalk_report import result_types as rt
from ptwalk_report import results as res
from ptwalk_report.walk_kinds import LockUnit, WalkKind

SCRIPTS = Path(__file__).resolve().parents[1]
REPO = SCRIPTS.parent
REFERENCE = REPO / "results" / "reference"
# a module-backend result with alias_calibration, stall_estimate, validation
# and split stalls; a tracepoint one whose stalls carry walker_off_cpu_ns
MODULE = (REFERENCE / "smaps-rollup-backport" / "run-2" / "vm" / "before" / "results"
          / "rollup_alias-3.json.gz")
OFF_CPU = REFERENCE / "cross-version" / "host" / "results" / "pagemap_scan-thp-below-2.json.gz"


def _doc(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        d: dict[str, Any] = json.load(f)
    return d


def _recorded() -> list[Path]:
    out = []
    for p in sorted([*REFERENCE.rglob("*.json*"), *(SCRIPTS / "tests" / "data").rglob("*.json*")]):
        try:
            d = synthetic.read(p)
        except (ValueError, OSError):
            continue
        if isinstance(d, dict) and d.get("schema") == SCHEMA:
            out.append(p)
    return out


def _json_of(v: Any) -> Any:
    """A parsed value as the JSON writes it (enums by their text)."""
    if isinstance(v, enum.Enum):
        return v.value
    if isinstance(v, tuple):
        return [_json_of(x) for x in v]
    if isinstance(v, dict):
        return {_json_of(k): _json_of(x) for k, x in v.items()}
    return v


# members whose JSON is not the member of the same name
RENAMED = {"index", "path", "doc", "tool_version"}
# members parsed from a nested object of the same JSON object
NESTED = {"since": ("changed", "since")}


def _same(obj: Any, j: dict[str, Any], where: str) -> int:
    """Every member of the dataclass obj against the JSON object j: equal
    when present, None (or empty) when absent. Returns members checked."""
    n = 0
    for f in dataclasses.fields(obj):
        if f.name in RENAMED:
            continue
        v = getattr(obj, f.name)
        at = f"{where}.{f.name}"
        if f.name in NESTED and f.name not in j:
            outer, inner = NESTED[f.name]
            want = (j.get(outer) or {}).get(inner)
            assert v == want, f"{at}: parsed {v!r}, JSON {outer}.{inner} {want!r}"
            n += 1
            continue
        if f.name not in j or j[f.name] is None:
            assert v in (None, (), {}, False), f"{at}: absent in the JSON, parsed {v!r}"
            continue
        n += 1
        x = j[f.name]
        if dataclasses.is_dataclass(v):
            n += _same(v, x, at)
        elif isinstance(v, tuple) and v and dataclasses.is_dataclass(v[0]):
            assert len(v) == len(x), at
            for i, (a, b) in enumerate(zip(v, x)):
                n += _same(a, b, f"{at}[{i}]")
        elif isinstance(v, dict) and v and dataclasses.is_dataclass(next(iter(v.values()))):
            assert {_json_of(k) for k in v} == set(x), at
            for k, a in v.items():
                n += _same(a, x[_json_of(k)], f"{at}.{_json_of(k)}")
        elif f.name == "virtualized":
            assert v == (x if isinstance(x, str) else None), at
        elif isinstance(v, float) and isinstance(x, (int, float)):
            assert v == pytest.approx(x), at
        else:
            assert _json_of(v) == x, f"{at}: parsed {v!r}, JSON {x!r}"
    return n


def test_every_recorded_result_parses_and_round_trips() -> None:
    paths = _recorded()
    assert len(paths) >= 100, "the recorded results moved"
    checked = 0
    for p in paths:
        d = synthetic.read(p)
        r = rt.parse(p, d)
        checked += _same(r, d, p.name)
        assert r.tool_version == d["tool"]["version"]
        assert [w.index for w in r.walks] == list(range(len(d["walks"])))
    assert checked > 100_000


def test_a_module_result_reads_as_members() -> None:
    d = _doc(MODULE)
    r = rt.parse(MODULE, d)
    assert r.backend == rt.Backend.module and r.usable and r.scenario.backing == rt.Backing.alias
    w = r.walks[0]
    assert w.kind == WalkKind(d["walks"][0]["kind"])
    assert w.duration_ns == d["walks"][0]["duration_ns"]
    assert r.alias_calibration is not None and r.stall_estimate is not None
    est = r.stall_estimate.kinds[w.kind]
    assert est.lock_unit == LockUnit(d["stall_estimate"]["kinds"][w.kind.value]["lock_unit"])
    assert r.validation is not None and r.validation.walks is not None
    assert r.validation.walks.agree is d["validation"]["walks"]["agree"]
    assert r.kernel_view is not None and r.kernel_view.counters is not None
    assert any(s.split for s in r.stalls)
    assert r.measured_on == rt.MeasuredOn(True, "tcg", "realtime", d["host"]["vm"]["qemu"])
    # a stall's walk is an index into walks
    s = next(s for s in r.stalls if s.walk is not None)
    assert r.walk_of(s) is r.walks[s.walk or 0]


def test_off_cpu_parts_and_absent_parts() -> None:
    r = rt.parse(OFF_CPU, _doc(OFF_CPU))
    with_off = [s for s in r.stalls if s.walker_off_cpu_ns is not None]
    assert with_off and all(s.split for s in with_off)


def test_absent_members_are_none_not_zero() -> None:
    d = synthetic.make_result(rng=random.Random(1), walks=2, held_ns=None)
    for k in ("lock_hold_ns", "max_stall_ns", "ns_per_pte"):
        del d["walks"][0][k]
    d["victims"]["mmap"]["run_delay_ns"] = 1234
    r = rt.parse(Path("s.json"), d)
    w0, w1 = r.walks
    assert (w0.lock_hold_ns, w0.max_stall_ns, w0.ns_per_pte) == (None, None, None)
    assert w1.lock_hold_ns is not None and w0.kernel_walk_ns is None and w0.pte_slots is None
    # a stall without its split: the parts are None, and it is not split
    s = r.stalls[0]
    assert (s.walker_held_ns, s.others_held_ns, s.free_ns) == (None, None, None)
    assert not s.split and s.walker_off_cpu_ns is None and s.acquired is None
    assert r.victims[rt.VictimName.mmap].run_delay_ns == 1234
    assert r.validation is None and r.alias_calibration is None and r.host.vm is None
    assert r.measured_on == rt.MeasuredOn()
    # a split of 0 ns is a figure, not an absence
    s0 = d["kernel_view"]["stalls"][0]
    s0.update(walker_held_ns=0, others_held_ns=0, free_ns=s0["wait_ns"])
    s = rt.parse(Path("s.json"), d).stalls[0]
    assert s.split and s.walker_held_ns == 0


def test_a_stall_of_another_waiter_reads_by_its_comm() -> None:
    """The module's view lists the stalls of every thread a walk blocked:
    one ptwalk did not register carries its comm, not a victim name."""
    d = copy.deepcopy(_doc(MODULE))
    s0 = d["kernel_view"]["stalls"][0]
    del s0["victim"]
    s0["waiter_comm"] = "ptwalk-workload"
    r = rt.parse(Path("s.json"), d)
    s = r.stalls[0]
    assert s.victim is None and s.waiter_comm == "ptwalk-workload"
    assert s.waiter == "ptwalk-workload"
    s1 = r.stalls[1]
    assert s1.victim is not None and s1.waiter_comm is None and s1.waiter == s1.victim.value
    _same(s, s0, "stalls[0]")


def test_the_cross_checks_read_as_members() -> None:
    """What the cross-validation and end-to-end tests read: the two views'
    agreement, a split's clock spread, the victims' runnable time against
    schedstat, the sched events followed, and the operations and stalls
    one view leaves unexplained."""
    d = copy.deepcopy(_doc(MODULE))
    val, kv = d["validation"], d["kernel_view"]
    val["stalls"].update(not_behind_walk=3, unexplained=[
        {"victim": "mmap", "tid": 7, "start_ns": 10, "ns": 2_000_000}],
        unconfirmed=[{"tid": 7, "start_ns": 20, "wait_ns": 1_500_000}])
    tp = copy.deepcopy(val["stalls"])   # the tracepoint view judged alone
    del tp["not_behind_walk"]
    tp.update(view="tracepoint", outside_walk_holds=2)
    val["stalls_tracepoint"] = tp
    val["views"] = {"module_stalls": 31, "module_in_tracepoint": 30, "tracepoint_in_module": 29,
                    "tracepoint_stalls": 33, "split_compared": 28, "split_agree": 27,
                    "split_max_diff_ns": 40_000}
    val["stall_parts"]["runnable_vs_schedstat"] = {"victims": 2, "bad": 1,
                                                   "tolerance_ns": 1_000_000,
                                                   "bad_victims": ["fault"]}
    kv["stalls"][0]["clock_spread_ns"] = 1234
    kv["stalls"][1]["at_release"] = True
    d["host"]["thp"]["defrag"] = None   # an unreadable setting is null
    kv["sched_events"] = {"available": True, "filter": "kernel", "waiters": False,
                          "waiters_why": "no wakeup filter"}
    r = rt.parse(Path("x.json"), d)
    assert r.validation is not None and r.validation.stalls is not None
    st = r.validation.stalls
    assert (st.not_behind_walk, st.reference_ops_dropped, st.confirmed_by_upkeep) == (3, 0, 0)
    assert st.unexplained[0].victim is rt.VictimName.mmap and st.unexplained[0].ns == 2_000_000
    assert st.unconfirmed[0].wait_ns == 1_500_000
    tps = r.validation.stalls_tracepoint
    assert tps is not None and (tps.outside_walk_holds, tps.not_behind_walk) == (2, None)
    assert st.outside_walk_holds is None
    views = r.validation.views
    assert views is not None and (views.split_compared, views.split_agree) == (28, 27)
    parts = r.validation.stall_parts
    assert parts is not None and parts.runnable_vs_schedstat is not None
    assert parts.runnable_vs_schedstat.bad_victims == (rt.VictimName.fault,)
    assert r.stalls[0].clock_spread_ns == 1234 and r.stalls[1].clock_spread_ns is None
    assert r.stalls[1].at_release is True and r.stalls[0].at_release is None
    assert r.kernel_view is not None and r.kernel_view.sched_events is not None
    sched = r.kernel_view.sched_events
    assert sched.available and sched.waiters is False and sched.why is None
    assert r.kernel_view.counter("failed_attempts.all") == kv["counters"]["failed_attempts.all"]
    assert r.kernel_view.counter("no_such_counter") is None
    assert r.host.thp["defrag"] is None and r.host.thp["enabled"]
    mm = r.kernel_view.thread("mmap")
    assert mm is not None and mm.attributed == kv["threads"]["mmap"]["attributed"]
    assert mm.waits is not None and mm.waits.count == kv["threads"]["mmap"]["waits"]["count"]
    assert r.kernel_view.thread("ptwalk-workload") is None
    size = r.workload.size_start if r.workload is not None else None
    assert size is not None and size.vmas == d["workload"]["size_start"]["vmas"]
    assert _same(r, d, "x.json") > 0
    # absent: no views, no runnable check, no sched events
    plain = rt.parse(MODULE, _doc(MODULE))
    assert plain.validation is not None and plain.validation.views is None
    assert plain.validation.stall_parts is not None
    assert plain.validation.stall_parts.runnable_vs_schedstat is None
    assert plain.kernel_view is not None and plain.kernel_view.sched_events is None
    val["stall_parts"]["runnable_vs_schedstat"]["bad_victims"] = ["sleep"]
    with pytest.raises(rt.ResultError, match="runnable_vs_schedstat.bad_victims.0.: unknown"):
        rt.parse(Path("x.json"), d)


def test_the_layout_and_the_zero_page_notes_read_as_members() -> None:
    """The workload's VMA layout, and a zeropage run's two notes: why its
    figures are a lower bound, and where its PTE count came from."""
    d = copy.deepcopy(_doc(MODULE))
    lay = d["workload"]["vma_layout"]
    r = rt.parse(Path("x.json"), d)
    assert r.workload is not None and r.workload.vma_layout is not None
    assert r.workload.vma_layout.mapping.vmas == lay["mapping"]["vmas"]
    assert sum(b.count for b in r.workload.vma_layout.size_histogram) == lay["vmas"]
    assert r.scenario.lower_bound is None and r.workload.ptes_source is None
    d["scenario"]["lower_bound"] = "zero-page PTEs are not in Rss"
    d["workload"]["ptes_source"] = "zero-page: counted from the PTE tables"
    r = rt.parse(Path("x.json"), d)
    assert r.workload is not None and r.workload.ptes_source == d["workload"]["ptes_source"]
    assert r.scenario.lower_bound == d["scenario"]["lower_bound"]
    assert _same(r, d, "x.json") > 0
    del lay["mapping"]["vmas"]
    with pytest.raises(rt.ResultError, match="workload.vma_layout.mapping.vmas: missing"):
        rt.parse(Path("x.json"), d)


def test_a_walk_without_a_lock_reads_as_none() -> None:
    """The C++ LockMode names it "none"; writers before it wrote "" in a
    kind summary whose first walk took no lock."""
    d = copy.deepcopy(_doc(MODULE))
    d["walks"][0]["lock_mode"] = "none"
    first = next(iter(d["walk_summary"]))
    d["walk_summary"][first]["lock_mode"] = ""
    r = rt.parse(Path("s.json"), d)
    assert r.walks[0].lock_mode is rt.WalkLockMode.none
    assert r.walk_summary[WalkKind(first)].lock_mode is rt.WalkLockMode.none
    d["walk_summary"][first]["lock_mode"] = "mixed"   # the module's name, not the results'
    with pytest.raises(rt.ResultError):
        rt.parse(Path("s.json"), d)


def _broken(change: Any) -> rt.ResultError:
    d = copy.deepcopy(_doc(MODULE))
    change(d)
    with pytest.raises(rt.ResultError) as e:
        rt.parse(Path("broken.json"), d)
    return e.value


@pytest.mark.parametrize("change, where, what", [
    (lambda d: d["walks"][2].update(kind="smapz"), "walks[2].kind", "unknown WalkKind 'smapz'"),
    (lambda d: d.update(backend="ebpf"), "backend", "unknown Backend 'ebpf'"),
    (lambda d: d["scenario"].update(backing="anon2"), "scenario.backing", "unknown Backing"),
    (lambda d: d["scenario"]["victims"].append("sleep"), "scenario.victims[1]",
     "unknown VictimName 'sleep'"),
    (lambda d: d["kernel_view"]["stalls"][0].update(victim="x"), "kernel_view.stalls[0].victim",
     "unknown VictimName 'x'"),
    (lambda d: d["kernel_view"]["stalls"][0].pop("victim"), "kernel_view.stalls[0].victim",
     "missing, and no waiter_comm"),
    (lambda d: d["kernel_view"]["stalls"][0].update(waiter_comm="ptwalk-workload"),
     "kernel_view.stalls[0].waiter_comm", "beside victim, want one of the two"),
    (lambda d: d["stall_estimate"]["kinds"]["smaps_rollup"].update(lock_unit="page"),
     "stall_estimate.kinds.smaps_rollup.lock_unit", "unknown LockUnit 'page'"),
    (lambda d: d["walks"][1].update(duration_ns="12"), "walks[1].duration_ns",
     "is a string, want an integer"),
    (lambda d: d["walks"][1].update(lock_mode="both"), "walks[1].lock_mode",
     "unknown WalkLockMode"),
    (lambda d: d["walks"][0].pop("start_ns"), "walks[0].start_ns", "missing"),
    (lambda d: d.pop("scenario"), "scenario", "missing"),
    (lambda d: d.update(walks={}), "walks", "is an object, want an array"),
    (lambda d: d["victims"]["mmap"]["during"].update(buckets=[[1]]),
     "victims.mmap.during.buckets[0]", "want [lower_bound_ns, count]"),
    (lambda d: d["validation"]["walks"].update(agree="yes"), "validation.walks.agree",
     "want true or false"),
    (lambda d: d["host"]["vm"].update(accel="hvf"), "host.vm.accel", "unknown Accel 'hvf'"),
])
def test_a_bad_member_is_one_error_naming_it(change: Any, where: str, what: str) -> None:
    e = _broken(change)
    assert e.where == where and what in str(e), str(e)
    assert str(e).startswith(f"broken.json: {where}: ")
    assert isinstance(e, rt.InputError)   # the tools' one-line error


def test_load_reads_typed_results_and_names_a_bad_file(tmp_path: Path) -> None:
    r = res.load([MODULE])[0]
    assert isinstance(r, rt.Result) and r.backend == rt.Backend.module
    with pytest.raises(res.InputError, match="broken.json: walks.2..kind: unknown WalkKind"):
        res.load([_write_broken(tmp_path)])


def _write_broken(tmp: Path) -> Path:
    d = _doc(MODULE)
    d["walks"][2]["kind"] = "smapz"
    p = tmp / "broken.json"
    p.write_text(json.dumps(d), encoding="utf-8")
    return p


@pytest.mark.parametrize("tool", [
    ["ptwalk-report", "--out", "OUT"], ["ptwalk-compare", "GOOD"], ["-m", "ptwalk_report.budgets"],
])
def test_the_tools_print_one_line_and_fail(tool: list[str], tmp_path: Path) -> None:
    bad = _write_broken(tmp_path)
    args = [str(tmp_path / "o") if a == "OUT" else str(MODULE) if a == "GOOD" else a
            for a in tool]
    cmd = ([sys.executable, *args] if args[0] == "-m" else
           [sys.executable, str(SCRIPTS / args[0]), *args[1:]])
    p = subprocess.run([*cmd, str(bad)], cwd=SCRIPTS, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 2, p
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert "broken.json: walks[2].kind: unknown WalkKind 'smapz'" in lines[0]
