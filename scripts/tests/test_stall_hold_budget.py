# SPDX-License-Identifier: GPL-2.0
"""stall-walk-held (scripts/ptwalk_report/holds.py): the walk's part of a
wait against a fixed budget per entry under one hold of the kind's lock
unit. Synthetic results (scripts/ptwalk_report/synthetic.py)."""
from __future__ import annotations

import json
import random
from pathlib import Path

from ptwalk_report import budgets as bud
from ptwalk_report import results as res
from ptwalk_report import synthetic

MS = 1_000_000
MIB = 1 << 20
HOLD = {"id": "stall-walk-held", "check": "stall_vs_hold",
        "max_ns_per_entry": {"*": 100, "pagemap": 50}, "slack_ns": 1 * MS}
WALK = {"id": "stall-within-walk", "check": "stall_vs_walk", "factor": 1.5,
        "slack_ns": 1 * MS, "gap_ns": MS}


def _load(tmp: Path, name: str, **kw) -> list[res.Result]:
    kw.setdefault("rng", random.Random(3))
    kw.setdefault("lock_unit", "whole_walk")
    doc = synthetic.make_result(size_bytes=400 * MIB, ptes=100_000, spread=0.01, **kw)
    return res.load([synthetic.write(doc, tmp / f"{name}.json")])


def _main(vs: list[bud.Verdict]) -> list[bud.Verdict]:
    return [v for v in vs if v.verdict != bud.INFO]


def test_twice_the_hold_fails_where_stall_within_walk_cannot(tmp_path: Path) -> None:
    """Walks at 60 ns/entry whose stalls are all walk-held pass; the same
    walks at 120 ns/entry (a kernel holding the lock twice as long) fail
    stall-walk-held (100 ns/entry x 100k entries + 1 ms = 11 ms), while
    stall-within-walk, whose bound grows with the walk, passes both."""
    ok = _load(tmp_path, "ok", ns_per_pte=60.0, stall_ns=6 * MS, held_ns=5.9 * MS)
    slow = _load(tmp_path, "slow", ns_per_pte=120.0, stall_ns=12 * MS, held_ns=11.9 * MS)
    v_ok = _main(bud.evaluate([HOLD, WALK], ok))
    v_slow = _main(bud.evaluate([HOLD, WALK], slow))
    assert [(v.budget, v.verdict) for v in v_ok] == [
        ("stall-walk-held[clear_refs]", bud.PASS), ("stall-within-walk", bud.PASS)], v_ok
    assert [(v.budget, v.verdict) for v in v_slow] == [
        ("stall-walk-held[clear_refs]", bud.FAIL), ("stall-within-walk", bud.PASS)], v_slow
    assert "11.9ms" in v_slow[0].figure and "119.0 ns/entry" in v_slow[0].figure, v_slow[0]
    assert "= 11ms" in v_slow[0].limit, v_slow[0].limit


def test_free_time_and_off_cpu_are_not_the_walks(tmp_path: Path) -> None:
    """An 18 ms wait of which the walk held 2 ms passes; a 12 ms walk-held
    part of which the walker was off CPU 10 ms passes too, and says so."""
    rs = _load(tmp_path, "free", ns_per_pte=20.0, stall_ns=18 * MS, held_ns=2 * MS)
    assert [v.verdict for v in _main(bud.evaluate([HOLD], rs))] == [bud.PASS]
    doc = json.loads(rs[0].path.read_text())
    for s in doc["kernel_view"]["stalls"]:
        s["wait_ns"] = s["walker_held_ns"] = 12 * MS
        s["free_ns"] = s["others_held_ns"] = 0
        s["walker_off_cpu_ns"] = 10 * MS
    vs = _main(bud.evaluate([HOLD], res.load([synthetic.write(doc, tmp_path / "off.json")])))
    assert [v.verdict for v in vs] == [bud.PASS], vs
    assert "walker off CPU 10ms of its hold not counted" in vs[0].figure, vs[0]


def test_waiter_runnable_is_not_the_walks(tmp_path: Path) -> None:
    """The busy-host case: pagemap over 1 GiB beside two busy loops, a
    writer waited 32.5 ms, the walker holding 27.3 ms of it on CPU
    (5 ms off CPU), because the woken writer did not run to set rwsem's
    handoff bit and the walker kept taking the lock back. With the
    waiter's runnable part known (20 ms of it), the walk's part is 2.3 ms:
    PASS, and the verdict says what was not counted; without it, the same
    stall FAILs, as before; a walk that holds the lock too long while the
    waiter sleeps still FAILs."""
    hold = dict(HOLD, handoff_ns=12 * MS, slack_ns=10 * MS,
                max_ns_per_entry={"*": 1000})
    kw = dict(profile="pagemap", lock_unit="pmd_chunk", hold_bytes=2 * MIB,
              ns_per_pte=30.0)
    doc = json.loads(_load(tmp_path, "busy", stall_ns=3 * MS, held_ns=3 * MS,
                           **kw)[0].path.read_text())
    for s in doc["kernel_view"]["stalls"]:
        s["wait_ns"], s["walker_held_ns"] = int(32.5 * MS), int(27.3 * MS)
        s["others_held_ns"], s["free_ns"] = 0, int(5.2 * MS)
        s["walker_off_cpu_ns"] = 5 * MS
    without = _main(bud.evaluate([hold], res.load([synthetic.write(doc, tmp_path / "a.json")])))
    assert [v.verdict for v in without] == [bud.FAIL], without
    for s in doc["kernel_view"]["stalls"]:
        s["waiter_runnable_ns"] = 20 * MS
    with_ = _main(bud.evaluate([hold], res.load([synthetic.write(doc, tmp_path / "b.json")])))
    assert [v.verdict for v in with_] == [bud.PASS], with_
    assert "worst walk-held part 2.3ms" in with_[0].figure, with_[0]
    assert "waiter runnable but not on a CPU for 20ms of it not counted" in with_[0].figure
    for s in doc["kernel_view"]["stalls"]:
        s["waiter_runnable_ns"] = 0  # the waiter slept: the walk's doing
    asleep = _main(bud.evaluate([hold], res.load([synthetic.write(doc, tmp_path / "c.json")])))
    assert [v.verdict for v in asleep] == [bud.FAIL], asleep


def test_one_chunk_is_the_unit(tmp_path: Path) -> None:
    """pagemap holds the lock per 2 MiB: 100k entries over 400 MiB are 500
    under one hold, so 50 ns/entry x 500 + 1 ms = 1.025 ms: a 3 ms walk-held
    part fails, a 0.9 ms one passes."""
    kw = dict(profile="pagemap", lock_unit="pmd_chunk", hold_bytes=2 * MIB, ns_per_pte=30.0)
    bad = _main(bud.evaluate([HOLD], _load(tmp_path, "bad", stall_ns=3 * MS, held_ns=3 * MS,
                                           **kw)))
    good = _main(bud.evaluate([HOLD], _load(tmp_path, "good", stall_ns=3 * MS,
                                            held_ns=0.9 * MS, **kw)))
    assert [v.verdict for v in bad] == [bud.FAIL] and "500 entries" in bad[0].figure, bad
    assert [v.verdict for v in good] == [bud.PASS], good


def test_without_split_or_unit_no_guess(tmp_path: Path) -> None:
    """No split (older results): the whole wait is judged, and the verdict
    says so; no lock unit in the result: SKIP with the reason; no stall
    list (the syscall backend): SKIP, the backend's; no stall at all in a
    view that lists them: PASS, nothing to judge against."""
    nosplit = _main(bud.evaluate([HOLD], _load(tmp_path, "nosplit", stall_ns=3 * MS)))
    assert [v.verdict for v in nosplit] == [bud.PASS], nosplit
    assert "split unavailable for 10 of 10 walks" in nosplit[0].detail, nosplit[0]
    slow = _main(bud.evaluate([HOLD], _load(tmp_path, "slow", stall_ns=12 * MS)))
    assert [v.verdict for v in slow] == [bud.FAIL], slow
    nounit = _main(bud.evaluate([HOLD], _load(tmp_path, "nounit", stall_ns=3 * MS,
                                              held_ns=3 * MS, lock_unit=None)))
    assert [v.verdict for v in nounit] == [bud.SKIP] and "lock_unit" in nounit[0].detail
    doc = json.loads(_load(tmp_path, "none", held_ns=1 * MS)[0].path.read_text())
    doc["kernel_view"]["stalls"] = []
    vs = _main(bud.evaluate([HOLD], res.load([synthetic.write(doc, tmp_path / "n.json")])))
    assert [v.verdict for v in vs] == [bud.PASS] and "no attributed stall" in vs[0].figure
    del doc["kernel_view"]
    doc["backend"] = "syscall"
    vs = _main(bud.evaluate([HOLD], res.load([synthetic.write(doc, tmp_path / "s.json")])))
    assert [v.verdict for v in vs] == [bud.SKIP], vs
    assert vs[0].detail == "backend syscall does not attribute stalls", vs[0]
