"""A/B comparison of two ptwalk result sets, per scenario and metric.

A sample is one walk (walk cost, lock hold, attributed stall) or one run
(victim latency quantiles during walks). A change is significant when
Welch's t-test and Mann-Whitney U both reject "same distribution" at
alpha and the change of means is at least --min-change percent. Every
metric here is "higher is worse", so a significant increase is a
REGRESSION and a significant decrease an IMPROVEMENT. With 3 runs a side
Mann-Whitney cannot reach p < 0.05 at all; there Welch alone decides
(marked '~'). Fewer than 3 samples on a side: no verdict.

Exit status: 0 no regression, 1 regression, 2 bad input."""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from . import results as res
from . import stats

MIN_SAMPLES = 3
REGRESSION = "REGRESSION"
IMPROVEMENT = "IMPROVEMENT"
NO_CHANGE = "NO SIGNIFICANT CHANGE"
NO_VERDICT = "NO VERDICT"


@dataclass
class Row:
    metric: str
    unit: str
    per: str
    n_a: int
    n_b: int
    mean_a: float | None = None
    mean_b: float | None = None
    stddev_pct_a: float | None = None
    stddev_pct_b: float | None = None
    change_pct: float | None = None
    ci_low: float | None = None      # 95% CI of mean(B) - mean(A), in `unit`
    ci_high: float | None = None
    welch_p: float | None = None
    mwu_p: float | None = None
    pooled_a: float | None = None    # quantile of merged histograms
    pooled_b: float | None = None
    significant: bool = False
    verdict: str = NO_VERDICT
    note: str = ""
    note_mwu: str = ""


@dataclass
class ScenarioComparison:
    scenario: str
    runs_a: int
    runs_b: int
    verdict: str
    rows: list[Row] = field(default_factory=list)
    note: str = ""


def compare_samples(name: str, unit: str, per: str, a: Sequence[float], b: Sequence[float], *,
                    alpha: float, min_change_pct: float, seed: int,
                    iterations: int = 2000) -> Row:
    row = Row(name, unit, per, len(a), len(b))
    if len(a) < MIN_SAMPLES or len(b) < MIN_SAMPLES:
        row.note = "n<3: no verdict"
        if a:
            row.mean_a = stats.mean(a)
        if b:
            row.mean_b = stats.mean(b)
        return row
    ma, mb = stats.mean(a), stats.mean(b)
    row.mean_a, row.mean_b = ma, mb
    row.stddev_pct_a = 100.0 * stats.stdev(a) / ma if ma else 0.0
    row.stddev_pct_b = 100.0 * stats.stdev(b) / mb if mb else 0.0
    row.change_pct = 100.0 * (mb - ma) / ma if ma else (0.0 if mb == ma else math.inf)
    row.ci_low, row.ci_high = stats.bootstrap_diff_ci(a, b, seed=seed, iterations=iterations)
    row.welch_p = stats.welch_t(a, b).p
    row.mwu_p = stats.mann_whitney_u(a, b).p
    if mwu_floor(len(a), len(b)) >= alpha:
        # e.g. 3 runs against 3: no rank order reaches alpha, Welch decides
        mwu_ok = True
        row.note_mwu = f"MWU cannot reach p<{alpha:g} at n={len(a)}/{len(b)}"
    else:
        mwu_ok = row.mwu_p < alpha
    row.significant = (row.welch_p < alpha and mwu_ok
                       and abs(row.change_pct) >= min_change_pct)
    if row.significant:
        row.verdict = REGRESSION if mb > ma else IMPROVEMENT
    else:
        row.verdict = NO_CHANGE
    return row


def mwu_floor(na: int, nb: int) -> float:
    """Smallest p-value Mann-Whitney U can give for these sample sizes."""
    return stats.mann_whitney_u(list(range(na)), list(range(na, na + nb))).p


def combine(verdicts: Sequence[str]) -> str:
    if REGRESSION in verdicts:
        return REGRESSION
    if IMPROVEMENT in verdicts:
        return IMPROVEMENT
    if NO_CHANGE in verdicts:
        return NO_CHANGE
    return NO_VERDICT


def compare_sets(a: list[res.Result], b: list[res.Result], *, alpha: float = 0.05,
                 min_change_pct: float = 5.0, seed: int = 1,
                 iterations: int = 2000) -> tuple[str, list[ScenarioComparison]]:
    ga = res.group(r for r in a if r.usable)
    gb = res.group(r for r in b if r.usable)
    out: list[ScenarioComparison] = []
    for key in sorted(set(ga) | set(gb)):
        ra, rb = ga.get(key, []), gb.get(key, [])
        if not ra or not rb:
            out.append(ScenarioComparison(str(key), len(ra), len(rb), NO_VERDICT,
                                          note=f"only in {'A' if ra else 'B'}"))
            continue
        ma, mb = res.metrics(ra), res.metrics(rb)
        sc = ScenarioComparison(str(key), len(ra), len(rb), NO_VERDICT)
        for name in sorted(set(ma) | set(mb), key=_metric_order):
            xa, xb = ma.get(name), mb.get(name)
            proto = xa or xb
            assert proto is not None
            row = compare_samples(name, proto.unit, proto.per, xa.samples if xa else [],
                                  xb.samples if xb else [], alpha=alpha,
                                  min_change_pct=min_change_pct,
                                  seed=stats.seed_for(f"{key}|{name}", seed),
                                  iterations=iterations)
            row.pooled_a = xa.pooled if xa else None
            row.pooled_b = xb.pooled if xb else None
            sc.rows.append(row)
        sc.verdict = combine([r.verdict for r in sc.rows])
        if sc.verdict == NO_VERDICT:
            sc.note = "n<3 on every metric"
        out.append(sc)
    return combine([s.verdict for s in out]), out


def _metric_order(name: str) -> tuple[int, str]:
    return (0 if name.startswith("walk ") else 1, name)


def fmt_value(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "ns/PTE":
        return f"{v:.2f}" if v < 100 else f"{v:.1f}" if v < 10000 else f"{v:.0f}"
    return fmt_ns(v)


def fmt_ns(v: float) -> str:
    a = abs(v)
    if a >= 3600e9:
        return f"{v / 3600e9:.3g}h"
    if a >= 100e9:
        return f"{v / 60e9:.3g}min"
    if a >= 1e9:
        return f"{v / 1e9:.3g}s"
    if a >= 1e6:
        return f"{v / 1e6:.3g}ms"
    if a >= 1e3:
        return f"{v / 1e3:.3g}us"
    return f"{v:.3g}ns"


def render(verdict: str, scs: list[ScenarioComparison], *, label_a: str, label_b: str,
           alpha: float, min_change_pct: float) -> str:
    lines = [f"ptwalk-compare  A: {label_a}  B: {label_b}",
             f"significant (*): Welch p < {alpha} and Mann-Whitney p < {alpha} and "
             f"|change| >= {min_change_pct:g}%",
             "  (where MWU cannot reach the level for the sample sizes, e.g. 3 runs vs 3,"
             " Welch alone decides: marked '~')",
             "CI: 95% bootstrap CI of mean(B)-mean(A) (seeded); samples: per walk or per run", ""]
    for sc in scs:
        lines.append(f"scenario {sc.scenario}   runs A={sc.runs_a} B={sc.runs_b}")
        if sc.rows:
            lines.append(f"{'A':>12}  {'%stddev':>7}  {'%change':>10}  {'B':>12}  {'%stddev':>7}  "
                         f"{'n A/B':>9}  {'95% CI of B-A':>23}  {'Welch p':>8}  {'MWU p':>8}  metric")
        for r in sc.rows:
            if r.note:
                lines.append(f"{fmt_value(r.mean_a, r.unit):>12}  {'':>7}  {'':>10}  "
                             f"{fmt_value(r.mean_b, r.unit):>12}  {'':>7}  "
                             f"{f'{r.n_a}/{r.n_b}':>9}  {r.note:>23}  {'':>8}  {'':>8}  {r.metric}")
                continue
            star = "*" if r.significant else " "
            chg = f"{star}{r.change_pct:+.1f}%{star}"
            ci = f"[{fmt_value(r.ci_low, r.unit)}, {fmt_value(r.ci_high, r.unit)}]"
            pooled = ""
            if r.pooled_a is not None and r.pooled_b is not None:
                pooled = f"  (merged histograms: {fmt_ns(r.pooled_a)} -> {fmt_ns(r.pooled_b)})"
            lines.append(f"{fmt_value(r.mean_a, r.unit):>12}  ±{r.stddev_pct_a:4.0f}%  {chg:>10}  "
                         f"{fmt_value(r.mean_b, r.unit):>12}  ±{r.stddev_pct_b:4.0f}%  "
                         f"{f'{r.n_a}/{r.n_b}':>9}  {ci:>23}  {r.welch_p:8.3g}  {r.mwu_p:7.3g}{'~' if r.note_mwu else ' '}  "
                         f"{r.metric} ({r.unit}, per {r.per}){pooled}")
        note = f" ({sc.note})" if sc.note else ""
        lines.append(f"verdict {sc.scenario}: {sc.verdict}{note}")
        lines.append("")
    lines.append(f"overall: {verdict}")
    return "\n".join(lines) + "\n"


def to_json(verdict: str, scs: list[ScenarioComparison], **meta: Any) -> dict[str, Any]:
    def clean(x: Any) -> Any:
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, list):
            return [clean(v) for v in x]
        return x
    return clean({"schema": "ptwalk.compare/1", **meta, "verdict": verdict,
                  "scenarios": [asdict(s) for s in scs]})


def _label(rs: list[res.Result], args: list[str]) -> str:
    rel = sorted({r.release for r in rs})
    return f"{' '.join(args)} ({len(rs)} results, kernel {', '.join(rel)})"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="ptwalk-compare", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", nargs="+", metavar="A",
                   help="A B: baseline and candidate, each a result file or a directory "
                   "(searched recursively); or several baseline files/directories with --vs")
    p.add_argument("--vs", dest="b", nargs="+", metavar="B",
                   help="candidate files/directories when A is a list")
    p.add_argument("--json", metavar="OUT", help="also write the comparison as JSON")
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--min-change", type=float, default=5.0, metavar="PCT",
                   help="smallest |change of means| in percent that counts (default 5)")
    p.add_argument("--seed", type=int, default=1, help="bootstrap seed (default 1)")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    # A B as two positionals (the usual form), or A... --vs B...
    if args.b is None:
        if len(args.a) != 2:
            print("ptwalk-compare: error: want A B (two files/directories), or A... --vs B...",
                  file=sys.stderr)
            return 2
        args.a, args.b = [args.a[0]], [args.a[1]]
    if not 0.0 < args.alpha < 1.0:
        print("ptwalk-compare: error: --alpha must be in (0, 1)", file=sys.stderr)
        return 2
    try:
        a = res.load(args.a)
        b = res.load(args.b)
        if not any(r.usable for r in a) or not any(r.usable for r in b):
            raise res.InputError("no complete result on one side")
    except res.InputError as e:
        print(f"ptwalk-compare: error: {e}", file=sys.stderr)
        return 2
    verdict, scs = compare_sets(a, b, alpha=args.alpha, min_change_pct=args.min_change,
                                seed=args.seed)
    la, lb = _label(a, args.a), _label(b, args.b)
    sys.stdout.write(render(verdict, scs, label_a=la, label_b=lb, alpha=args.alpha,
                            min_change_pct=args.min_change))
    skipped = [str(r.path) for r in a + b if not r.usable]
    if skipped:
        print(f"skipped incomplete or failed results: {' '.join(skipped)}")
    if args.json:
        doc = to_json(verdict, scs, a=la, b=lb, alpha=args.alpha,
                      min_change_pct=args.min_change, seed=args.seed, skipped=skipped)
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    return 1 if verdict == REGRESSION else 0
