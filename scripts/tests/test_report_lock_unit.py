"""The report extrapolates a kind's worst stall in the unit it holds
mmap_lock by (stall_estimate.kinds.KIND.lock_unit, written by the C++
side), on the walk's part of the stall, and shows the split; the upstream
text quotes the walk's share. Synthetic sweeps spanning two decades."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from ptwalk_cli import run_ptwalk
from ptwalk_report import report, synthetic
from ptwalk_report import results as res
from ptwalk_report.upstream import render_upstream
from ptwalk_report.walk_kinds import LockUnit

MS = 1_000_000
US = 1_000
MIB = 1 << 20
SIZES = (1, 16, 128, 512)


def CHUNK(size: int) -> int:       # noqa: N802  (pagemap: one 2 MiB range per hold)
    return min(size, 2 * MIB)
    # 956 .. 131,772 entries: 138x


def _sweep(tmp: Path, kind: str, **kw) -> list[res.Result]:
    rng = random.Random(11)
    files = []
    for mib in SIZES:
        for i in range(2):
            n = mib * 256 + 700
            args = dict(kw)
            if callable(args.get("hold_bytes")):
                args["hold_bytes"] = args["hold_bytes"](mib * MIB)
            doc = synthetic.make_result(rng=rng, profile=kind, size_bytes=mib * MIB, ptes=n,
                                        walks=4, ns_per_pte=25.0, spread=0.02, **args)
            files.append(synthetic.write(doc, tmp / "in" / f"{kind}-{mib}M-{i}.json"))
    return res.load(files)


def _group(rs: list[res.Result], kind: str) -> report.CostGroup:
    return next(g for g in report.cost_groups(rs) if g.kind == res.WalkKind(kind))


def test_pagemap_stall_stays_flat_at_a_chunk_hold(tmp_path: Path) -> None:
    """Stalls that grow with the walk (0.8 x its duration: the waiter was
    not running) while the walk held one 2 MiB range, 40 us, at a time:
    the old linear fit of the whole wait predicts ~0.5 s at 25M entries,
    the chunk unit a few holds."""
    rs = _sweep(tmp_path, "pagemap", held_ns=40 * US, lock_unit="pmd_chunk",
                hold_bytes=CHUNK)
    g = _group(rs, "pagemap")
    assert g.lock_unit == LockUnit.pmd_chunk and g.split and g.extrapolates and g.span > 100
    largest_hold = max(p.worst_held or 0.0 for p in g.runs)
    assert largest_hold == 40 * US
    p = report.predict_stall(g, 25_000_000)
    assert p.value is not None and p.value <= 5 * largest_hold, p
    assert "flat" in p.text and "walk-held stalls up to 40us" in p.text
    assert g.stall_fit is not None and g.stall_fit.predict(25_000_000) > 300 * MS  # the old way
    # without the split: the model's hold of one range (the longest walk x
    # 2 MiB / size), still flat and far below the whole-wait fit
    rs = _sweep(tmp_path / "raw", "pagemap", lock_unit="pmd_chunk", hold_bytes=CHUNK)
    g = _group(rs, "pagemap")
    p = report.predict_stall(g, 25_000_000)
    assert not g.split and p.value is not None and 10 * US < p.value < 50 * US, p
    assert "model" in p.text


def test_whole_walk_extrapolates_the_walk_held_part_linearly(tmp_path: Path) -> None:
    rs = _sweep(tmp_path, "clear_refs", held_ns=0, lock_unit="whole_walk")
    for i, r in enumerate(rs):   # the walk held the lock for half its duration
        for w in r.doc["walks"]:
            w["max_stall_walker_held_ns"] = w["duration_ns"] // 2
        rs[i] = res.parse(r.path, r.doc)
    g = _group(rs, "clear_refs")
    p = report.predict_stall(g, 25_000_000)
    assert g.held_fit is not None and "walk held; linear in entries" in p.text
    assert p.value == pytest.approx(0.5 * 25 * 25e6, rel=0.1)        # 312 ms, not 500
    assert g.stall_fit is not None
    assert g.stall_fit.predict(25e6) == pytest.approx(0.8 * 25 * 25e6, rel=0.1)
    assert "walk held" in report.measured_stall(g) and "whole wait" in report.measured_stall(g)


def test_per_vma_units_follow_the_layout(tmp_path: Path) -> None:
    one = _group(_sweep(tmp_path / "one", "smaps_rollup", lock_unit="vma_when_contended"),
                 "smaps_rollup")
    p = report.predict_stall(one, 25_000_000)
    assert p.value == pytest.approx(25 * 25e6, rel=0.1) and "one VMA" in p.text
    # VMAs of 64 MiB: the largest hold stops growing at 64 MiB
    rs = _sweep(tmp_path / "v64", "smaps_rollup", lock_unit="vma_when_contended",
                layout=("VMAs of 64.0 MiB", 8, 64 * MIB),
                hold_bytes=lambda size: min(size, 64 * MIB))
    g = _group(rs, "smaps_rollup")
    p = report.predict_stall(g, 25_000_000)
    assert p.value is not None and "flat" in p.text and "64 MiB" in p.text, p
    # the walk of 64 MiB: 16,384 entries x 25 ns ~ 0.41 ms (the estimate
    # of the 512 MiB runs: their longest walk x 64/512)
    assert 0.3 * MS < p.value < 0.6 * MS, p


def test_per_vma_lock_walk_gets_no_mmap_lock_stall(tmp_path: Path) -> None:
    """A smaps sweep from a kernel where smaps walks under per-VMA locks
    (lock_unit vma_lock, written by the C++ side from the kernel's locking
    fact): no mmap_lock stall is extrapolated, and the report says why,
    where the read_chunk unit of older kernels predicts the whole walk
    (one VMA holding the mapping: ~0.6 s at 25M entries, the figure that
    7.3 runs were given)."""
    old = _group(_sweep(tmp_path / "old", "smaps", lock_unit="read_chunk"), "smaps")
    p_old = report.predict_stall(old, 25_000_000)
    assert p_old.value is not None and p_old.value > 300 * MS, p_old
    g = _group(_sweep(tmp_path / "new", "smaps", lock_unit="vma_lock"), "smaps")
    assert g.lock_unit == LockUnit.vma_lock
    p = report.predict_stall(g, 25_000_000)
    assert p.value is None and "per-VMA" in p.text and "not mmap_lock" in p.text, p
    # the report of such runs names the unit and gives no figure
    rs = _sweep(tmp_path / "rep", "smaps", lock_unit="vma_lock")
    md = report.generate(rs, tmp_path / "out")[0].read_text()
    ext = md.split("## Extrapolation")[1].split("\n## ")[0]
    rows = [x for x in ext.splitlines() if "| smaps |" in x]
    assert rows and all("none (VMA locks)" in x and "not mmap_lock" in x for x in rows), rows


def test_unknown_unit_is_not_guessed(tmp_path: Path) -> None:
    rs = _sweep(tmp_path, "pagemap")           # no stall_estimate in the results
    g = _group(rs, "pagemap")
    p = report.predict_stall(g, 25_000_000)
    assert g.lock_unit is None and p.value is None and "lock unit unknown" in p.text
    md = report.generate(rs, tmp_path / "rep")[0].read_text()
    ext = md.split("## Extrapolation")[1].split("\n## ")[0]
    rows = [x for x in ext.splitlines() if "| pagemap |" in x]
    assert len(rows) == 2 and all("lock unit unknown" in x and "| unknown |" in x for x in rows)
    assert all("split unavailable" in x for x in rows)


def test_report_and_upstream_show_the_split(tmp_path: Path) -> None:
    rs = _sweep(tmp_path, "pagemap", stall_ns=18.1 * MS, held_ns=2.4 * MS, others_ns=0.3 * MS,
                lock_unit="pmd_chunk", hold_bytes=CHUNK, during_ops=1000, victim_ms=20.0)
    md = report.generate(rs, tmp_path / "rep")[0].read_text()
    sec = md.split("## Worst stalls: walk held / other holders / free")[1].split("\n## ")[0]
    rows = [x for x in sec.splitlines() if x.startswith("| pagemap/")]
    assert rows and all("| 18.1ms | 2.4ms (13%) | 300us | 15.4ms |" in x for x in rows), rows
    ext = md.split("## Extrapolation")[1].split("\n## ")[0]
    assert "| 2 MiB range | walk held 2.4ms / whole wait 18.1ms |" in ext

    text = render_upstream(rs[-1])
    assert all(len(x) <= 72 for x in text.splitlines())
    assert "walk held 2.4ms (13%)" in text and "free 15.4ms" in text, text
    # 1000 mmap ops, p99.9 is the 2nd longest; 4 stalls with 2.4 ms of walk
    assert "the walk's share 2.4ms" in text and "mmap p99.9 during walks 2" in text, text
    # without the split the text says so, and quotes no share
    raw = _sweep(tmp_path / "raw", "pagemap", stall_ns=18.1 * MS)
    text = render_upstream(raw[-1])
    assert "split unavailable" in text and "walk held" not in text
    md = report.generate(raw, tmp_path / "rep2")[0].read_text()
    assert "Split unavailable (the results' views did not split their waits)" in md


def test_every_lock_unit_has_its_text() -> None:
    """The report names every unit the C++ side can write (a new unit
    without its text was a KeyError in report.generate), with the text
    ptwalk run and ptwalk locking print (one list: PTW_LOCK_UNITS)."""
    from ptwalk_report.walk_kinds import UNIT_TEXT
    assert set(UNIT_TEXT) == set(LockUnit)
    p = run_ptwalk("locking", "--release", "7.3", timeout=10)
    assert p.returncode == 0, p
    rows = {ln.split()[0]: ln for ln in p.stdout.splitlines()[2:-1]}
    for kind, unit in (("smaps", LockUnit.vma_lock), ("smaps_rollup", LockUnit.vma_when_contended),
                       ("clear_refs", LockUnit.whole_walk), ("pagemap", LockUnit.pmd_chunk)):
        assert f" {UNIT_TEXT[unit]} " in rows[kind], (kind, rows[kind])
