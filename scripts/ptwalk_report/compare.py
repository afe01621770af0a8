"""A/B comparison of two ptwalk result sets, per scenario and metric.

The unit of replication is the run: each run contributes one value per
metric (the median of its walks for walk metrics; the run's own quantile
for victim latencies). Per-walk data only give the within-run spread.

Test, chosen from the sample sizes before looking at the values:
  exact Mann-Whitney U (SciPy, method 'exact') when it can reach alpha for
  the numbers of runs (4 vs 4 and more; 3 vs 3 cannot: its smallest
  two-sided p is 0.1); else Welch's t-test for walk metrics whose run values
  are medians of at least 5 walks (approximately normal) and
  spread on both sides; else "too few runs to test".
Tail metrics (victim max; a quantile q with fewer than 10 / (1 - q)
operations in some run) are reported, not tested.
False discoveries: Benjamini-Hochberg across every tested row of the whole
comparison (all scenarios, all metrics), at level alpha.
A row is flagged (*) when its BH-adjusted q < alpha AND |change of means|
exceeds its noise: the largest of the minimum change, the run-to-run
%stddev of either side, and the A/A calibration for that scenario and
metric. The A/A calibration is the file measured under the results' clock
(results/budgets/aa-noise.json on a machine, aa-noise-vm-ACCEL-CLOCK.json
for ptwalk-vm guests, e.g. aa-noise-vm-tcg-icount.json; measured by
`make bench`); the minimum change is --min-change, else that file's
min_change_pct (A/A noise measured in that clock mode), else 5%.
Every metric is "higher is worse": a flagged increase is a REGRESSION, a
flagged decrease an IMPROVEMENT.

Exit status: 0 no regression, 1 regression, 2 bad input."""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from . import hist
from . import layout
from . import results as res
from . import stats

REGRESSION = "REGRESSION"
IMPROVEMENT = "IMPROVEMENT"
NO_CHANGE = "NO SIGNIFICANT CHANGE"
NO_VERDICT = "NO VERDICT"

MIN_RUNS = 3            # fewer runs a side: nothing is tested
WELCH_MIN_WALKS = 5     # a run's median of this many walks counts as ~normal
TAIL_OPS = 10           # quantile q testable with >= TAIL_OPS / (1 - q) ops per run
REPO = layout.REPO
DEFAULT_NOISE = layout.budgets_dir() / "aa-noise.json"
NOISE_SCHEMA = "ptwalk.aa-noise/1"
DEFAULT_MIN_CHANGE = 5.0  # percent, when the A/A calibration gives none

# victim latency quantiles of the phase during walks: label, key, q
VICTIM_QUANTILES = (("p90", "p90_ns", 0.90), ("p99", "p99_ns", 0.99),
                    ("p99.9", "p999_ns", 0.999), ("max", "max_ns", 1.0))
# per-walk figures: label, the Walk member, unit
WALK_FIELDS: tuple[tuple[str, Callable[[res.Walk], float | None], str], ...] = (
    ("ns/PTE", lambda w: w.ns_per_pte, "ns/PTE"), ("lock hold", lambda w: w.lock_hold_ns, "ns"),
    ("max stall", lambda w: w.max_stall_ns, "ns"))


@dataclass
class Series:
    """One metric of one scenario on one side: a value per run."""
    name: str
    unit: str
    per: str                                    # what one run's value is
    runs: list[float] = field(default_factory=list)
    walks: list[int] = field(default_factory=list)      # walks behind each run value
    within_pct: list[float] = field(default_factory=list)  # within-run %stddev of walks
    ops: list[int] = field(default_factory=list)         # victim operations per run
    q: float | None = None                       # victim quantile, 1.0 = max
    pooled: float | None = None                  # quantile of the merged histograms


@dataclass
class Row:
    metric: str
    unit: str
    per: str
    n_a: int                          # runs
    n_b: int
    mean_a: float | None = None       # mean of the run values
    mean_b: float | None = None
    stddev_pct_a: float | None = None  # run-to-run %stddev (LKP's column)
    stddev_pct_b: float | None = None
    within_pct_a: float | None = None  # median of within-run %stddev of walks
    within_pct_b: float | None = None
    change_pct: float | None = None
    ci_low: float | None = None        # 95% bootstrap interval of %change (runs resampled)
    ci_high: float | None = None
    test: str = ""                     # "MWU exact", "MWU asymptotic", "Welch", ""
    p: float | None = None
    q: float | None = None             # Benjamini-Hochberg adjusted p
    noise_pct: float | None = None
    noise_from: str = ""
    pooled_a: float | None = None
    pooled_b: float | None = None
    tested: bool = False
    significant: bool = False
    verdict: str = NO_VERDICT
    note: str = ""


@dataclass
class ScenarioComparison:
    scenario: str
    runs_a: int
    runs_b: int
    verdict: str
    rows: list[Row] = field(default_factory=list)
    note: str = ""


@dataclass
class Comparison:
    verdict: str
    scenarios: list[ScenarioComparison]
    tested: int
    untested: int
    note: str = ""


def _pct_sd(xs: Sequence[float]) -> float:
    m = stats.mean(xs)
    return 100.0 * stats.stdev(xs) / m if m else 0.0


def series(runs: list[res.Result]) -> dict[str, Series]:
    """Per-run values of every compared metric for the runs of one scenario."""
    out: dict[str, Series] = {}
    for r in runs:
        per_kind: dict[str, list[res.Walk]] = {}
        for w in res.good_walks(r):
            per_kind.setdefault(w.kind.value, []).append(w)
        for kind, ws in sorted(per_kind.items()):
            for label, value, unit in WALK_FIELDS:
                vals = [float(x) for x in map(value, ws) if x is not None]
                if not vals:
                    continue
                s = out.setdefault(f"walk {kind} {label}",
                                   Series(f"walk {kind} {label}", unit, "run median of walks"))
                s.runs.append(stats.median(vals))
                s.walks.append(len(vals))
                s.within_pct.append(_pct_sd(vals) if len(vals) > 1 else 0.0)
        for vname, v in sorted(r.victims.items(), key=lambda x: x[0].value):
            if not v.during.count:
                continue
            for label, key, q in VICTIM_QUANTILES:
                x = v.during.quantile(key)
                if x is None:
                    continue
                name = f"{vname.value} {label} during walks"
                s = out.setdefault(name, Series(name, "ns", "run", q=q))
                s.runs.append(float(x))
                s.ops.append(v.during.count)
    for name, s in out.items():
        if s.q is None:
            continue
        merged = res.victim_hist(runs, res.VictimName(name.split(" ", 1)[0]), "during")
        s.pooled = hist.quantile(merged, s.q)
    return out


def ops_needed(q: float) -> int:
    return math.ceil(TAIL_OPS / (1.0 - q) - 1e-6) if q < 1.0 else 0


def choose_test(a: Series | None, b: Series | None, alpha: float) -> tuple[str, str]:
    """(test, reason it is not tested) from sample sizes and metric type only."""
    if a is None or b is None:
        return "", f"only in {'A' if a else 'B'}"
    na, nb = len(a.runs), len(b.runs)
    if a.q is not None:
        if a.q >= 1.0:
            return "", "tail (max): reported, not tested"
        need = ops_needed(a.q)
        few = min(a.ops + b.ops)
        if few < need:
            return "", f"tail: {few} ops in a run < {need} for this quantile"
    if na < MIN_RUNS or nb < MIN_RUNS:
        return "", f"too few runs to test ({na} vs {nb})"
    if stats.mwu_floor(na, nb) < alpha:
        return ("MWU exact" if max(na, nb) <= stats.EXACT_MAX_N else "MWU asymptotic"), ""
    if a.q is None and min(a.walks + b.walks) >= WELCH_MIN_WALKS:
        # Welch's normal model does not hold for a side without spread
        # (e.g. no stall in any run: all zeros)
        if len(set(a.runs)) == 1 or len(set(b.runs)) == 1:
            return "", f"too few runs to test ({na} vs {nb}, no spread on one side)"
        return "Welch", ""
    return "", (f"too few runs to test ({na} vs {nb}: exact MWU p >= "
                f"{stats.mwu_floor(na, nb):.2g})")


def noise_file_for(on: res.MeasuredOn, budgets: Path | None = None) -> Path:
    """The A/A calibration measured under ON's clock: aa-noise.json for a
    machine, aa-noise-vm-ACCEL-CLOCK.json for a ptwalk-vm guest."""
    d = layout.budgets_dir() if budgets is None else budgets
    if not on.vm:
        return d / "aa-noise.json"

    def safe(w: str) -> str:
        return "".join(ch if ch.isalnum() else "_" for ch in w)
    return d / f"aa-noise-vm-{safe(on.accel)}-{safe(on.clock)}.json"


def read_noise(path: str | Path | None) -> tuple[dict[str, float], float | None]:
    """A/A calibration: ('scenario|metric' -> noise in percent of change,
    the file's min_change_pct or None)."""
    if path is None:
        return {}, None
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise res.InputError(f"{path}: cannot read A/A calibration: {e}") from None
    if not isinstance(doc, dict) or doc.get("schema") != NOISE_SCHEMA:
        raise res.InputError(f"{path}: not a {NOISE_SCHEMA} document")
    try:
        noise = {str(k): float(v) for k, v in doc.get("noise_pct", {}).items()}
        mc = doc.get("min_change_pct")
        mc = None if mc is None else float(mc)
    except (TypeError, ValueError, AttributeError) as e:
        raise res.InputError(f"{path}: bad A/A calibration value: {e}") from None
    if mc is not None and not 0.0 <= mc < 1000.0:
        raise res.InputError(f"{path}: min_change_pct {mc} out of range")
    return noise, mc


def load_noise(path: str | Path | None) -> dict[str, float]:
    """A/A calibration: 'scenario|metric' -> noise in percent of change."""
    return read_noise(path)[0]


@dataclass
class NoiseChoice:
    """The A/A calibration and minimum change a comparison uses, and why."""
    path: Path | None           # None: no calibration
    noise: dict[str, float]
    min_change_pct: float
    min_change_from: str        # "--min-change", "FILE", "default"
    why: str                    # which clock picked the file


def choose_noise(results: Sequence[res.Result], *, noise_arg: str | None = None,
                 min_change: float | None = None,
                 budgets: Path | None = None) -> NoiseChoice:
    """The calibration for RESULTS: --noise if given, else the file measured
    under their clock (none when they mix clocks or it is absent); the
    minimum change: --min-change, else the file's min_change_pct, else 5%."""
    clocks = sorted({r.measured_on for r in results if r.usable})
    if noise_arg is not None:
        path = None if noise_arg == "none" else Path(noise_arg)
        why = "given" if path else "none asked for"
    elif len(clocks) != 1:
        path, why = None, "results under mixed clocks: no one calibration applies"
    else:
        want = noise_file_for(clocks[0], budgets)
        path = want if want.exists() else None
        why = f"{clocks[0]}" + ("" if path else f": {want.name} absent, none measured")
    noise, mc = read_noise(path)
    if min_change is not None:
        return NoiseChoice(path, noise, min_change, "--min-change", why)
    if mc is not None:
        assert path is not None
        return NoiseChoice(path, noise, mc, path.name, why)
    return NoiseChoice(path, noise, DEFAULT_MIN_CHANGE, "default", why)


def make_row(scenario: str, a: Series | None, b: Series | None, *, alpha: float,
             min_change_pct: float, noise: dict[str, float], seed: int,
             iterations: int = 2000) -> Row:
    proto = a or b
    assert proto is not None
    row = Row(proto.name, proto.unit, proto.per, len(a.runs) if a else 0,
              len(b.runs) if b else 0)
    for side, s in (("a", a), ("b", b)):
        if s is None or not s.runs:
            continue
        setattr(row, f"mean_{side}", stats.mean(s.runs))
        setattr(row, f"stddev_pct_{side}", _pct_sd(s.runs) if len(s.runs) > 1 else None)
        if s.within_pct:
            setattr(row, f"within_pct_{side}", stats.median(s.within_pct))
        if s.q is not None:
            setattr(row, f"pooled_{side}", s.pooled)
    if a is not None and b is not None and row.mean_a is not None and row.mean_b is not None:
        row.change_pct = stats.rel_change(a.runs, b.runs)
        if len(a.runs) >= 2 and len(b.runs) >= 2:
            row.ci_low, row.ci_high = stats.bootstrap_change_ci(
                a.runs, b.runs, seed=seed, iterations=iterations)
    test, why = choose_test(a, b, alpha)
    if not test:
        row.note = why
        return row
    assert a is not None and b is not None
    row.test, row.tested = test, True
    row.p = (stats.welch_t(a.runs, b.runs) if test == "Welch"
             else stats.mann_whitney_u(a.runs, b.runs)).p
    cands = [(min_change_pct, "min change")]
    for sd in (row.stddev_pct_a, row.stddev_pct_b):
        if sd is not None:
            cands.append((sd, "runs"))
    cal = noise.get(f"{scenario}|{row.metric}")
    if cal is not None:
        cands.append((cal, "A/A"))
    row.noise_pct, row.noise_from = max(cands, key=lambda c: c[0])
    return row


def decide(rows: Sequence[Row], alpha: float) -> None:
    """Benjamini-Hochberg over the tested rows, then the noise rule."""
    tested = [r for r in rows if r.tested]
    for r, q in zip(tested, stats.bh_adjust([r.p for r in tested if r.p is not None])):
        r.q = q
        assert r.change_pct is not None and r.noise_pct is not None
        r.significant = q < alpha and abs(r.change_pct) > r.noise_pct
        if r.significant:
            r.verdict = REGRESSION if r.change_pct > 0 else IMPROVEMENT
        else:
            r.verdict = NO_CHANGE


def combine(verdicts: Sequence[str]) -> str:
    if REGRESSION in verdicts:
        return REGRESSION
    if IMPROVEMENT in verdicts:
        return IMPROVEMENT
    if NO_CHANGE in verdicts:
        return NO_CHANGE
    return NO_VERDICT


def compare_sets(a: list[res.Result], b: list[res.Result], *, alpha: float = 0.05,
                 min_change_pct: float = DEFAULT_MIN_CHANGE, noise: dict[str, float] | None = None,
                 seed: int = 1, iterations: int = 2000) -> Comparison:
    noise = {} if noise is None else noise
    ga = res.group(r for r in a if r.usable)
    gb = res.group(r for r in b if r.usable)
    out: list[ScenarioComparison] = []
    for key in sorted(set(ga) | set(gb)):
        ra, rb = ga.get(key, []), gb.get(key, [])
        sc = ScenarioComparison(str(key), len(ra), len(rb), NO_VERDICT)
        out.append(sc)
        if not ra or not rb:
            sc.note = f"only in {'A' if ra else 'B'}"
            continue
        sa, sb = series(ra), series(rb)
        for name in sorted(set(sa) | set(sb), key=_metric_order):
            sc.rows.append(make_row(str(key), sa.get(name), sb.get(name), alpha=alpha,
                                    min_change_pct=min_change_pct, noise=noise,
                                    seed=stats.seed_for(f"{key}|{name}", seed),
                                    iterations=iterations))
    rows = [r for s in out for r in s.rows]
    decide(rows, alpha)
    for sc in out:
        sc.verdict = combine([r.verdict for r in sc.rows])
        if sc.verdict == NO_VERDICT and sc.rows:
            sc.note = "no metric could be tested"
    tested = sum(r.tested for r in rows)
    verdict = combine([s.verdict for s in out])
    note = ""
    if not tested:
        note = "too few runs to test anything: run more repeats per side (see docs/verdicts.md)"
    return Comparison(verdict, out, tested, len(rows) - tested, note)


def aa_noise(pairs: Sequence[tuple[list[res.Result], list[res.Result]]], *,
             digits: int) -> dict[str, float]:
    """An A/A calibration: per "scenario|metric", the largest |%change| of
    the run means between the sets of each A/A pair (rounded to digits);
    a change_pct compare_sets() leaves undefined or infinite is left out."""
    noise: dict[str, float] = {}
    for a, b in pairs:
        for s in compare_sets(a, b).scenarios:
            for row in s.rows:
                if row.change_pct is not None and abs(row.change_pct) != float("inf"):
                    key = f"{s.scenario}|{row.metric}"
                    noise[key] = round(max(noise.get(key, 0.0), abs(row.change_pct)), digits)
    return noise


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


def _sd(v: float | None) -> str:
    return f"±{v:4.0f}%" if v is not None else ""


def render(c: Comparison, *, label_a: str, label_b: str, alpha: float,
           min_change_pct: float, noise_file: str, min_change_from: str = "",
           noise_why: str = "") -> str:
    lines = [f"ptwalk-compare  A: {label_a}  B: {label_b}",
             "samples: one value per run (walk metrics: the run's median of its walks); "
             "%stddev: run to run",
             f"tests: exact Mann-Whitney U where it can reach p<{alpha:g} (>= 4 vs 4 runs), "
             f"else Welch on walk metrics (runs of >= {WELCH_MIN_WALKS} walks); "
             "tails (max, quantiles of few ops) reported, not tested",
             f"FDR: Benjamini-Hochberg over the {c.tested} tested rows of this comparison; "
             f"q = adjusted p",
             f"flagged (*): q < {alpha:g} and |%change| > noise = max({min_change_pct:g}%"
             + (f" ({min_change_from})" if min_change_from else "")
             + f", run-to-run %stddev, A/A calibration: {noise_file})",
             *([f"A/A calibration chosen for: {noise_why}"] if noise_why else []),
             "CI: 95% bootstrap interval of %change, resampling runs (seeded)", ""]
    hdr = (f"{'A':>10}  {'%stddev':>7}  {'%change':>10}  {'B':>10}  {'%stddev':>7}  "
           f"{'runs':>5}  {'95% CI':>16}  {'test':>6}  {'p':>7}  {'q':>7}  {'noise':>6}  metric")
    for sc in c.scenarios:
        lines.append(f"scenario {sc.scenario}   runs A={sc.runs_a} B={sc.runs_b}")
        if sc.rows:
            lines.append(hdr)
        for r in sc.rows:
            runs = f"{r.n_a}/{r.n_b}"
            chg = "" if r.change_pct is None else f"{r.change_pct:+.1f}%"
            if r.significant:
                chg = f"*{chg}*"
            elif r.tested:
                chg = f" {chg} "
            else:
                chg = f"({chg})" if chg else ""
            ci = ("" if r.ci_low is None else f"[{r.ci_low:+.0f}%, {r.ci_high:+.0f}%]")
            what = f"{r.metric} ({r.unit}, per {r.per})"
            if r.pooled_a is not None and r.pooled_b is not None:
                what += f" (merged histograms: {fmt_ns(r.pooled_a)} -> {fmt_ns(r.pooled_b)})"
            if r.tested:
                test = "MWU" if r.test.startswith("MWU") else "Welch"
                stat = (f"{test:>6}  {r.p:7.3g}  {r.q:7.3g}  "
                        f"{r.noise_pct:5.1f}%")
            else:
                stat = f"{'-':>6}  {'':>7}  {'':>7}  {'':>6}"
                what += f"  [{r.note}]"
            lines.append(f"{fmt_value(r.mean_a, r.unit):>10}  {_sd(r.stddev_pct_a):>7}  "
                         f"{chg:>10}  {fmt_value(r.mean_b, r.unit):>10}  "
                         f"{_sd(r.stddev_pct_b):>7}  {runs:>5}  {ci:>16}  {stat}  {what}")
        note = f" ({sc.note})" if sc.note else ""
        lines.append(f"verdict {sc.scenario}: {sc.verdict}{note}")
        lines.append("")
    flagged = sum(r.significant for s in c.scenarios for r in s.rows)
    lines.append(f"rows: {c.tested} tested, {flagged} flagged, {c.untested} reported only")
    lines.append(f"overall: {c.verdict}" + (f" ({c.note})" if c.note else ""))
    return "\n".join(lines) + "\n"


def to_json(c: Comparison, **meta: Any) -> dict[str, Any]:
    def clean(x: Any) -> Any:
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, list):
            return [clean(v) for v in x]
        return x
    return clean({"schema": "ptwalk.compare/2", **meta, "verdict": c.verdict,
                  "tested_rows": c.tested, "untested_rows": c.untested, "note": c.note,
                  "scenarios": [asdict(s) for s in c.scenarios]})


def _label(rs: list[res.Result], args: list[str]) -> str:
    rel = sorted({r.release for r in rs})
    return f"{' '.join(args)} ({len(rs)} results, kernel {', '.join(rel)})"


def _write_atomic(path: str, doc: dict[str, Any]) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def parser() -> argparse.ArgumentParser:
    """ptwalk compare's options: its usage and its man page (gen-man.py)."""
    p = argparse.ArgumentParser(prog="ptwalk-compare", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", nargs="+", metavar="A",
                   help="A B: baseline and candidate, each a result file or a directory "
                   "(searched recursively); or several baseline files/directories with --vs")
    p.add_argument("--vs", dest="b", nargs="+", metavar="B",
                   help="candidate files/directories when A is a list")
    p.add_argument("--json", metavar="OUT", help="also write the comparison as JSON")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="false discovery rate (Benjamini-Hochberg), default 0.05")
    p.add_argument("--min-change", type=float, default=None, metavar="PCT",
                   help="smallest |change of means| in percent that counts (default: the "
                   "A/A calibration's min_change_pct, else 5)")
    p.add_argument("--noise", metavar="FILE", default=None,
                   help=f"A/A calibration ({NOISE_SCHEMA}); default: the one measured under "
                   "the results' clock, results/budgets/aa-noise.json on a machine, "
                   "aa-noise-vm-ACCEL-CLOCK.json in a ptwalk-vm guest, when present; "
                   "'none' for none")
    p.add_argument("--seed", type=int, default=1, help="bootstrap seed (default 1)")
    p.add_argument("--mixed-clocks", action="store_true",
                   help="compare results measured under different clocks (a VM's "
                   "accelerator, clock mode or QEMU, or a VM against a machine)")
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
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
    if args.min_change is not None and not 0.0 <= args.min_change < 1000.0:
        print("ptwalk-compare: error: --min-change must be in [0, 1000)", file=sys.stderr)
        return 2
    try:
        a = res.load(args.a)
        b = res.load(args.b)
        if not any(r.usable for r in a) or not any(r.usable for r in b):
            raise res.InputError("no complete result on one side")
        clocks = sorted({r.measured_on for r in a + b if r.usable})
        if len(clocks) > 1 and not args.mixed_clocks:
            raise res.InputError(
                "the results were measured under different clocks, whose figures do not "
                f"compare: {'; '.join(map(str, clocks))} (--mixed-clocks to compare anyway)")
        nc = choose_noise(a + b, noise_arg=args.noise, min_change=args.min_change)
    except res.InputError as e:
        print(f"ptwalk-compare: error: {e}", file=sys.stderr)
        return 2
    c = compare_sets(a, b, alpha=args.alpha, min_change_pct=nc.min_change_pct,
                     noise=nc.noise, seed=args.seed)
    la, lb = _label(a, args.a), _label(b, args.b)
    shown = "none" if nc.path is None else os.path.relpath(nc.path, REPO) \
        if nc.path.resolve().is_relative_to(REPO) else str(nc.path)
    sys.stdout.write(render(c, label_a=la, label_b=lb, alpha=args.alpha,
                            min_change_pct=nc.min_change_pct, noise_file=shown,
                            min_change_from=nc.min_change_from, noise_why=nc.why))
    skipped = [str(r.path) for r in a + b if not r.usable]
    if skipped:
        print(f"skipped incomplete or failed results: {' '.join(skipped)}")
    if args.json:
        doc = to_json(c, a=la, b=lb, alpha=args.alpha, fdr="Benjamini-Hochberg",
                      min_change_pct=nc.min_change_pct, min_change_from=nc.min_change_from,
                      noise_file=shown, noise_chosen_for=nc.why, seed=args.seed,
                      skipped=skipped)
        _write_atomic(args.json, doc)
    return 1 if c.verdict == REGRESSION else 0
