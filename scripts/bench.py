#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Turns the benchmark runs of `make bench` into figures and ratios."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from ptwalk_report import results as res
from ptwalk_report.walk_kinds import WalkKind

REPO = Path(__file__).resolve().parents[1]


def medians(path: Path) -> dict[str, float]:
    data = json.loads(path.read_text())
    out: dict[str, float] = {}
    for b in data["benchmarks"]:
        # the median of repeated benchmarks, else the single run
        if b.get("aggregate_name") not in (None, "median"):
            continue
        name = re.sub(r"/(iterations|repeats):\d+", "", b["run_name"])
        if b.get("aggregate_name") is None and name in out:
            continue
        out[name] = float(b["real_time"]) * {
            "ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]]
    return out


def self_memory(size: str) -> res.SelfMemory:
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "r.json"
        subprocess.run([str(REPO / "build/ptwalk"), "run", "--size", size,
                        "--scanner", "smaps_rollup", "--interval", "500ms",
                        "--duration", "1s", "--victims", "read,mmap,fault",
                        "--quiet", "--out", str(out)], check=True)
        r = res.load([out])[0]
    assert r.self_memory is not None, "ptwalk run wrote no self_memory"
    return r.self_memory


def incident(size: str) -> None:
    """An aliased run at incident scale: populate rate, walk time, own memory."""
    import time
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "r.json"
        t0 = time.monotonic()
        p = subprocess.run([str(REPO / "build/ptwalk"), "run", "--size", size,
                            "--backing", "alias", "--calibrate-size", "2G",
                            "--scanner", "clear_refs", "--interval", "2s", "--duration", "8s",
                            "--victims", "read,mmap", "--quiet", "--out", str(out)],
                           capture_output=True, text=True)
        wall = time.monotonic() - t0
        if p.returncode != 0:
            print(f"  incident scale {size}: FAILED: {p.stderr.strip()}")
            return
        r = res.load([out])[0]
    w = r.workload
    s = r.walk_summary.get(WalkKind.clear_refs)
    mem = r.self_memory
    if w is None or w.size_start is None or s is None or mem is None:
        print(f"  incident scale {size}: the result lacks the workload, its clear_refs "
              "summary or self_memory")
        return
    own = max(x for x in (mem.parent_hwm_bytes, mem.scanner_hwm_bytes,
                          mem.workload_rss_minus_mapping_bytes, 0) if x is not None)
    corr = s.ns_per_pte_corrected_p50
    corr_s = f"{corr:.1f} corrected" if corr is not None else "no calibration"
    print(f"  incident scale {size} alias: {_m(w.size_start.ptes, 1e6, '.1f')}M PTEs populated "
          f"in {_m(w.populate_ns, 1e9, '.1f')} s; clear_refs p50 "
          f"{_m(s.duration_p50_ns, 1e6, '.0f')} ms ({_m(s.ns_per_pte_p50, 1, '.1f')} ns/PTE "
          f"raw, {corr_s}); whole run {wall:.0f} s; largest own RSS {own / 2**20:.1f} MiB")


def _m(v: float | None, div: float, spec: str) -> str:
    """v / div as spec says, "?" when the result lacks it."""
    return "?" if v is None else format(v / div, spec)


def main() -> int:
    m = medians(Path(sys.argv[1]) / "core.json")
    empty, rec = m["BM_EmptyLoop"], m["BM_HistogramRecord"]
    print("ptwalk bench (medians of 5 repetitions, one run)")
    print(f"  histogram record: {rec:.2f} ns/sample, empty loop {empty:.2f} ns: "
          f"record adds {rec - empty:.2f} ns (target <= 20 ns median)")
    cs = Path("/sys/devices/system/clocksource/clocksource0/current_clocksource")
    src = cs.read_text().strip() if cs.exists() else "?"
    print(f"  clock read (CLOCK_MONOTONIC, clocksource {src}): {m['BM_ClockRead']:.1f} ns"
          " (each victim operation pays two)")
    kp = m["BM_MapPopulate"]
    for t in (1, 2):
        v = m[f"BM_PopulateThreads/{t}"]
        print(f"  populate 1 GiB, {t} thread(s) MADV_POPULATE_WRITE: {v / 1e6:.0f} ms,"
              f" {kp / v:.2f}x the speed of MAP_POPULATE ({kp / 1e6:.0f} ms)")
    rows = {size: self_memory(size) for size in ("1G", "8G")}
    for size, s in rows.items():
        print(f"  own memory at --size {size}: parent peak RSS "
              f"{_m(s.parent_hwm_bytes, 2**20, '.1f')} MiB, workload RSS minus mapping "
              f"{_m(s.workload_rss_minus_mapping_bytes, 2**20, '.1f')} MiB, "
              f"scanner peak RSS {_m(s.scanner_hwm_bytes, 2**20, '.1f')} MiB")
    a = rows["1G"].workload_rss_minus_mapping_bytes
    b = rows["8G"].workload_rss_minus_mapping_bytes
    ratio = f"{b / max(a, 1):.2f}" if a is not None and b is not None else "? (not reported)"
    print(f"  own memory ratio 8 GiB / 1 GiB (O(1) in --size means ~1): {ratio}")
    incident("100G")
    if os.environ.get("BENCH_FULL", "0") not in ("", "0"):
        incident("1T")
    return 0


if __name__ == "__main__":
    sys.exit(main())
