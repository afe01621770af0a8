#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make bench, A/A part: PAIRS pairs of `QUICK=1` qualify on this kernel,
each pair compared with ptwalk compare. Reports how many pairs got an
overall REGRESSION or IMPROVEMENT verdict (target: at most 1 of 10) and the
share of tested metric rows flagged (target: at most 5%).

  bench_aa.py [--pairs 10] [--keep DIR]        record and evaluate
  bench_aa.py --evaluate DIR                   evaluate sets recorded in DIR
                                               (DIR/NN/runs, in pairs 00/01,...)
  bench_aa.py --evaluate DIR --calibrate OUT   also write the A/A calibration:
                                               per scenario and metric the largest
                                               |%change| seen between the pairs

Pairs are judged twice: with the noise of the runs alone (--noise none) and
with the A/A calibration ptwalk compare uses by default
(results/budgets/aa-noise.json), which was measured on other pairs.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ptwalk_report import compare  # noqa: E402
from ptwalk_report import results as res  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def record(out: Path, sets: int) -> None:
    """`QUICK=1 scripts/qualify.sh` `sets` times, into out/00, out/01, ..."""
    for i in range(sets):
        d = out / f"{i:02d}"
        if (d / "runs").is_dir() and any((d / "runs").glob("*.json")):
            continue  # recorded earlier (--keep DIR reused)
        env = dict(os.environ, QUICK="1", PTWALK_QUALIFY_OUT=str(d))
        t0 = time.monotonic()
        p = subprocess.run([str(REPO / "scripts/qualify.sh")], env=env, cwd=REPO,
                           capture_output=True, text=True)
        # exit 1 is a budget miss on a busy machine: the runs are still A/A data
        if p.returncode not in (0, 1):
            raise RuntimeError(f"qualify {i} failed ({p.returncode}): {p.stderr.strip()[-300:]}")
        print(f"  A/A: qualify {i + 1}/{sets} in {time.monotonic() - t0:.0f} s", flush=True)


def pairs_of(out: Path, pairs: int) -> list[tuple[list[res.Result], list[res.Result]]]:
    return [(res.load([out / f"{2 * i:02d}" / "runs"]),
             res.load([out / f"{2 * i + 1:02d}" / "runs"])) for i in range(pairs)]


def calibrate(sets: list[tuple[list[res.Result], list[res.Result]]], path: Path,
              source: str) -> None:
    noise = compare.aa_noise(sets, digits=1)
    doc = {"schema": compare.NOISE_SCHEMA,
           "comment": "A/A calibration of ptwalk compare: per scenario and metric, the "
                      "largest |%change of run means| between A/A pairs of QUICK=1 qualify "
                      "on one kernel. A change must exceed it to be flagged. Measured by "
                      "scripts/bench_aa.py --calibrate.",
           "source": source, "pairs": len(sets), "host": socket.gethostname(),
           "kernel": sorted({r.release for a, b in sets for r in a + b}),
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
           "noise_pct": dict(sorted(noise.items()))}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    print(f"  A/A calibration of {len(noise)} scenario metrics from {len(sets)} pairs: {path}")


def evaluate(sets: list[tuple[list[res.Result], list[res.Result]]],
             noise: dict[str, float], label: str) -> tuple[int, int, int]:
    """(pairs with an overall verdict of change, flagged rows, tested rows)."""
    bad = flagged = tested = 0
    print(f"  A/A, noise: {label}")
    for i, (a, b) in enumerate(sets):
        c = compare.compare_sets(a, b, noise=noise)
        rows = [r for s in c.scenarios for r in s.rows if r.tested]
        f = [r for r in rows if r.significant]
        bad += c.verdict in (compare.REGRESSION, compare.IMPROVEMENT)
        flagged += len(f)
        tested += len(rows)
        print(f"  A/A pair {i + 1}: {c.verdict}; {len(f)}/{len(rows)} tested rows flagged"
              + "".join(f"\n      {s.scenario}: {r.metric} {r.change_pct:+.1f}% q={r.q:.3g}"
                        for s in c.scenarios for r in s.rows if r.significant))
    return bad, flagged, tested


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--keep", type=Path, help="record into (and reuse) this directory")
    ap.add_argument("--evaluate", type=Path, help="only evaluate sets recorded here")
    ap.add_argument("--calibrate", type=Path, metavar="OUT",
                    help="write the A/A calibration of these pairs to OUT")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        out = args.evaluate or args.keep or Path(tmp)
        if not args.evaluate:
            record(out, 2 * args.pairs)
        sets = pairs_of(out, args.pairs)
    judged: list[tuple[dict[str, float], str]] = [({}, "runs only (--noise none)")]
    if compare.DEFAULT_NOISE.exists():
        judged.append((compare.load_noise(compare.DEFAULT_NOISE),
                       f"runs and {compare.DEFAULT_NOISE.relative_to(REPO)} (ptwalk compare's "
                       "default)"))
    for noise, label in judged:
        bad, flagged, tested = evaluate(sets, noise, label)
        share = flagged / tested if tested else 0.0
        print(f"  A/A ({args.pairs} pairs of QUICK=1 qualify, same kernel; noise: {label}): "
              f"{bad} pair(s) with an overall REGRESSION/IMPROVEMENT (target <= 1); {flagged} "
              f"of {tested} tested rows flagged = {share:.1%} (target <= 5%)")
    if args.calibrate:
        calibrate(sets, args.calibrate, str(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
