"""Production-scale figures of `make qualify`'s incident-scale runs: walk
duration and worst stall at the incident's 25M PTEs, aliased figures shown
raw and corrected by the run's own calibration, never one for the other.

`python3 -m ptwalk_report.incident RUNS_DIR [--json OUT]`"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from . import results as res

GIB = 1 << 30


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.0f} ms" if ns >= 1e7 else f"{ns / 1e6:.1f} ms"


def summarize(results: list[res.Result], min_size: int = 64 * GIB) -> list[dict[str, Any]]:
    """One row per (profile, walk kind) over the runs of at least min_size:
    the members of incident.json."""
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    for d in results:
        sc = d.scenario
        if sc.size_bytes < min_size:
            continue
        ratio = d.alias_calibration.ratio if d.alias_calibration is not None else {}
        worst = max((v.during.max_ns or 0 for v in d.victims.values()), default=0)
        for w in d.walks:
            if w.error is not None or w.incomplete is not None:
                continue
            key = (sc.profile.value, w.kind.value, sc.backing.value)
            r = rows.setdefault(key, {
                "profile": key[0], "kind": key[1], "backing": key[2],
                "size_bytes": sc.size_bytes, "ptes": w.ptes,
                "aliased": sc.aliased, "durations": [],
                "corrected": [], "worst_victim_stall_ns": 0, "max_attributed_stall_ns": 0,
                "calibration_ratio": ratio.get(w.kind)})
            r["durations"].append(w.duration_ns)
            if ratio.get(w.kind):
                r["corrected"].append(w.duration_ns * ratio[w.kind])
            r["worst_victim_stall_ns"] = max(r["worst_victim_stall_ns"], worst)
            r["max_attributed_stall_ns"] = max(r["max_attributed_stall_ns"],
                                               w.max_stall_ns or 0)
    out = []
    for r in rows.values():
        ds = sorted(r.pop("durations"))
        cs = sorted(r.pop("corrected"))
        r["walks"] = len(ds)
        r["duration_p50_ns"] = ds[len(ds) // 2]
        r["duration_max_ns"] = ds[-1]
        if cs:
            r["corrected_duration_p50_ns"] = cs[len(cs) // 2]
        out.append(r)
    return sorted(out, key=lambda r: (r["profile"], r["kind"]))


def render(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "incident scale: no run at incident scale (QUICK=1, or none completed)"
    lines = ["incident scale (CONTEXT.md: 100 GiB of 4 KiB pages, 25M PTEs):"]
    for r in rows:
        what = f"{r['profile']}/{r['kind']} {r['backing']} {r['size_bytes'] / GIB:.0f} GiB"
        line = (f"  {what}: {r['ptes'] / 1e6:.1f}M PTEs, walk p50 {_ms(r['duration_p50_ns'])}"
                f" max {_ms(r['duration_max_ns'])}")
        if r["aliased"]:
            if "corrected_duration_p50_ns" in r:
                line += (f" (ALIASED; x{r['calibration_ratio']:.2f} for distinct pages:"
                         f" ~{_ms(r['corrected_duration_p50_ns'])})")
            else:
                line += (" (ALIASED, uncorrected: no calibration whose sizes agree;"
                         " distinct pages cost differently)")
        line += f"; worst victim stall {_ms(r['worst_victim_stall_ns'])}"
        if r["max_attributed_stall_ns"]:
            line += f", longest attributed mmap_lock wait {_ms(r['max_attributed_stall_ns'])}"
        lines.append(line)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="ptwalk_report.incident")
    ap.add_argument("runs", type=Path)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    try:
        results = res.load([a.runs], strict=False) if a.runs.is_dir() else []
    except res.InputError as e:
        print(f"ptwalk_report.incident: error: {e}", file=sys.stderr)
        return 2
    rows = summarize(results)
    print(render(rows))
    if a.json:
        tmp = a.json.with_suffix(".tmp")
        tmp.write_text(json.dumps({"incident": rows}, indent=1) + "\n")
        tmp.replace(a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
