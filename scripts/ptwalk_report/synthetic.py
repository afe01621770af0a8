"""Synthetic ptwalk.result/1 documents for tests (only the members the
verdict layer reads), and transforms of recorded ones."""
from __future__ import annotations

import copy
import gzip
import json
import random
from pathlib import Path
from typing import Any

from . import SCHEMA


def _summary(lat: list[int]) -> dict[str, Any]:
    s = sorted(lat)
    n = len(s)

    def q(p: float) -> int:
        return s[max(1, -(-int(p * n * 1000) // 1000)) - 1]
    buckets: dict[int, int] = {}
    for x in s:
        buckets[x] = buckets.get(x, 0) + 1  # values are exact below 256 ns only; fine for tests
    return {"count": n, "min_ns": s[0], "p50_ns": q(0.5), "p90_ns": q(0.9), "p99_ns": q(0.99),
            "p999_ns": q(0.999), "p9999_ns": q(0.9999), "max_ns": s[-1],
            "mean_ns": sum(s) / n, "buckets": [[k, c] for k, c in sorted(buckets.items())]}


def make_result(*, rng: random.Random, profile: str = "clear_refs", backing: str = "anon",
                size_bytes: int = 1 << 30, ptes: int = 262144, walks: int = 10,
                ns_per_pte: float = 30.0, spread: float = 0.05, victim_ms: float = 5.0,
                release: str = "6.18.0", complete: bool = True, fixed_ns: float = 0.0,
                pmd_leaves: int | None = None, interval_ns: int = 100_000_000,
                duration_ns: int = 10**9,
                stall_ns: float | None = None, held_ns: float | None = None,
                others_ns: float = 0.0, walk_member: bool = True, during_ops: int = 50,
                lock_unit: str | None = None, hold_bytes: int | None = None,
                layout: tuple[str, int, int] | None = None) -> dict[str, Any]:
    """One result of `walks` walks, each with one attributed stall of the
    mmap victim: stall_ns long (default 0.8 x the walk). fixed_ns: a
    per-walk cost on top of ns_per_pte x ptes; pmd_leaves: reported per
    walk (thp); during_ops: the mmap victim's ops during walks. With held_ns
    the stall is split (results/SCHEMA.md): walker_held_ns = held_ns,
    others_held_ns = others_ns, free_ns = the rest, and the walk carries
    max_stall_walker_held_ns unless walk_member is False (then only
    kernel_view.stalls has it). With lock_unit, a stall_estimate for the
    walk kind: hold_bytes of the mapping under the longest hold (default
    the whole mapping) for layout (text, VMAs, largest VMA bytes; default
    one VMA per mapping), estimate_max_ns = the longest walk x hold_bytes /
    size_bytes, as userspace/model/src/vma_layout.cpp computes it."""
    t0 = 1_000_000_000
    ws: list[dict[str, Any]] = []
    stalls: list[dict[str, Any]] = []
    kind = profile if profile != "cadvisor" else "clear_refs"
    for i in range(walks):
        npp = rng.gauss(ns_per_pte, ns_per_pte * spread)
        dur = int(npp * ptes + fixed_ns)
        st = int(dur * 0.8 if stall_ns is None else stall_ns)
        w = {"kind": kind, "iteration": i,
             "start_ns": t0 + i * 100_000_000, "duration_ns": dur, "ptes": ptes,
             "ns_per_pte": dur / ptes, "lock_hold_ns": int(dur * 0.9), "lock_mode": "write",
             "stalls": 1, "max_stall_ns": st}
        if pmd_leaves is not None:
            w["pmd_leaves"] = pmd_leaves
        s = {"tid": 1, "victim": "mmap", "start_ns": t0 + i * 100_000_000 + 1000,
             "wait_ns": st, "mode": "write", "walk": i}
        if held_ns is not None:
            h = min(int(held_ns), st)
            o = min(int(others_ns), st - h)
            s.update(walker_held_ns=h, others_held_ns=o, free_ns=st - h - o)
            if walk_member:
                w["max_stall_walker_held_ns"] = h
        ws.append(w)
        stalls.append(s)
    stalls.sort(key=lambda x: -x["wait_ns"])
    outside = [int(rng.lognormvariate(8.0, 0.3)) for _ in range(2000)]
    during = [int(rng.gauss(victim_ms * 1e6, victim_ms * 1e6 * spread))
              for _ in range(during_ops)]
    doc = {
        "schema": SCHEMA, "tool": {"name": "ptwalk", "version": "0.1.0"}, "complete": complete,
        "started_at": "2026-11-21T00:00:00Z",
        "argv": ["ptwalk", "run", "--size", str(size_bytes), "--scanner", profile],
        "kernel": {"release": release, "version": "#1", "machine": "x86_64",
                   "config": {"CONFIG_PER_VMA_LOCK": "y"}},
        "host": {"hostname": "synthetic", "cpu_model": "test", "cpus": 2,
                 "mem_total_bytes": 8 << 30},
        "scenario": {"size_bytes": size_bytes, "backing": backing, "profile": profile,
                     "victims": ["mmap"], "interval_ns": interval_ns,
                     "duration_ns": duration_ns},
        "backend": "tracepoint", "backend_detail": "synthetic",
        "workload": {"size_start": {"entries": ptes}},
        "scan_start_ns": t0, "scan_end_ns": t0 + walks * 100_000_000,
        "walks": ws, "walks_dropped": 0, "walk_summary": {},
        "victims": {"mmap": {"tid": 1, "ops": 2000 + during_ops, "outside": _summary(outside),
                             "during": _summary(during)}},
        "kernel_view": {"source": "synthetic", "stalls": stalls, "stalls_total": len(stalls),
                        "stalls_complete_above_ns": 0},
    }
    if lock_unit is not None:
        text, vmas, largest = layout or ("one VMA per mapping", 1, size_bytes)
        hb = size_bytes if hold_bytes is None else hold_bytes
        dmax = max(w["duration_ns"] for w in ws)
        doc["stall_estimate"] = {
            "layout": text, "layout_vmas": vmas, "layout_largest_vma_bytes": largest,
            "kinds": {kind: {"lock_unit": lock_unit, "measured_hold_bytes": hb,
                             "layout_hold_bytes": hb, "status": "distinct",
                             "model_stall_max_ns": int(dmax * hb / size_bytes),
                             "estimate_max_ns": int(dmax * hb / size_bytes)}}}
    return doc


def minimal(walks: list[dict[str, Any]], **members: Any) -> dict[str, Any]:
    """A document of the members a result must have (result_types.parse)
    around WALKS (each given a start and a duration when it lacks them),
    plus MEMBERS: for tests of one reader."""
    ws = [{"start_ns": i * 100_000_000, "duration_ns": 1_000_000, "kind": "smaps_rollup", **w}
          for i, w in enumerate(walks)]
    doc: dict[str, Any] = {
        "schema": SCHEMA, "complete": True, "backend": "module",
        "scenario": {"size_bytes": 1 << 30, "backing": "alias", "profile": "smaps_rollup",
                     "victims": []},
        "walks": ws, "victims": {}}
    doc.update(members)
    return doc


def read(path: Path) -> dict[str, Any]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:  # type: ignore[operator]
        return json.load(f)


def write(doc: dict[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def scale_walks(doc: dict[str, Any], factor: float) -> dict[str, Any]:
    """A recorded result whose walks (duration, ns/PTE, lock hold, stalls)
    took `factor` times as long: an injected regression."""
    d = copy.deepcopy(doc)
    for w in d["walks"]:
        for k in ("duration_ns", "lock_hold_ns", "max_stall_ns"):
            if k in w:
                w[k] = int(w[k] * factor)
        if "ns_per_pte" in w:
            w["ns_per_pte"] *= factor
    return d
