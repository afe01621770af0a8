#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make bench, A/A part: PAIRS pairs of `QUICK=1` qualify on this kernel,
each pair compared with ptwalk compare. Reports how many pairs got an
overall REGRESSION or IMPROVEMENT verdict (target: at most 1 of 10) and the
share of tested metric rows flagged (target: at most 5%).

  bench_aa.py [--pairs 10] [--keep DIR]        record and evaluate
  bench_aa.py --evaluate DIR                   evaluate sets recorded in DIR
                                               (DIR/NN/runs, in pairs 00/01,...)
"""
from __future__ import annotations

import argparse
import os
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


def evaluate(out: Path, pairs: int) -> tuple[int, int, int]:
    """(pairs with an overall verdict of change, flagged rows, tested rows)."""
    bad = flagged = tested = 0
    for i in range(pairs):
        a = res.load([out / f"{2 * i:02d}" / "runs"])
        b = res.load([out / f"{2 * i + 1:02d}" / "runs"])
        c = compare.compare_sets(a, b)
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
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        out = args.evaluate or args.keep or Path(tmp)
        if not args.evaluate:
            record(out, 2 * args.pairs)
        bad, flagged, tested = evaluate(out, args.pairs)
    share = flagged / tested if tested else 0.0
    print(f"  A/A ({args.pairs} pairs of QUICK=1 qualify, same kernel): {bad} pair(s) with an "
          f"overall REGRESSION/IMPROVEMENT (target <= 1); {flagged} of {tested} tested rows "
          f"flagged = {share:.1%} (target <= 5%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
