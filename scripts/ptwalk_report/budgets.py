"""Budgets are data (results/budgets/*.json); this applies them to a set of
results, one verdict (PASS / FAIL / SKIP, with the figures) per budget and
scenario, and INFO lines that add context and never fail.
`python3 -m ptwalk_report.budgets` prints them, writes a summary JSON (INFO
lines included) and exits 0 when nothing FAILs, 1 otherwise, 2 on bad
input."""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from . import hist, layout, split, stats
from . import results as res
from .compare import fmt_ns

PASS, FAIL, SKIP, INFO = "PASS", "FAIL", "SKIP", "INFO"   # INFO: context, never judged
QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p99.9": 0.999, "p99.99": 0.9999, "max": 1.0}
Q_KEYS = {"p50": "p50_ns", "p90": "p90_ns", "p99": "p99_ns", "p99.9": "p999_ns",
          "p99.99": "p9999_ns", "max": "max_ns"}


@dataclass
class Verdict:
    budget: str
    scenario: str
    verdict: str
    figure: str
    limit: str
    detail: str = ""


def load_budgets(path: Path) -> list[dict[str, Any]]:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise res.InputError(f"{path}: {e}") from None
    if doc.get("schema") != "ptwalk.budgets/1" or not isinstance(doc.get("budgets"), list):
        raise res.InputError(f"{path}: not a ptwalk.budgets/1 document")
    for b in doc["budgets"]:
        if b.get("check") not in CHECKS:
            raise res.InputError(f"{path}: budget {b.get('id')!r}: "
                                 f"unknown check {b.get('check')!r}")
        # victims are named as results name them (result_types.VictimName)
        names = b.get("victims", []) + ([b["victim"]] if "victim" in b else [])
        known = {v.value for v in res.VictimName}
        for v in names:
            if v not in known:
                raise res.InputError(f"{path}: budget {b.get('id')!r}: unknown victim {v!r} "
                                     f"(known: {', '.join(sorted(known))})")
    return doc["budgets"]


def _complete(b: dict, key: str, runs: list[res.Result]) -> list[Verdict]:
    bad = [f"{r.path.name}: {r.error or r.interrupted or 'incomplete'}"
           for r in runs if not r.usable]
    errs = sum(1 for r in runs for w in r.walks if w.error is not None)
    # a walk that did not cover the workload (6.1's smaps_rollup skipping
    # the VMA after a yield: results/SCHEMA.md "incomplete") is a wrong
    # answer the kernel gave, not a cost: it fails here
    short = [(r, w) for r in runs for w in r.walks if w.incomplete is not None]
    ok = not bad and errs == 0 and not short
    why = bad + ([f"{len(short)} walks incomplete, e.g. {short[0][0].path.name} "
                  f"{short[0][1].kind.value} iteration {short[0][1].iteration}: "
                  f"{short[0][1].incomplete}"] if short else [])
    return [Verdict(b["id"], key, PASS if ok else FAIL,
                    f"{len(runs) - len(bad)}/{len(runs)} runs complete, {errs} walk errors, "
                    f"{len(short)} walks incomplete",
                    "all complete, 0 walk errors, 0 incomplete walks", "; ".join(why))]


def _limit(table: dict[str, float], kind: str, backing: str) -> float | None:
    """Most specific limit: "kind/backing", then "kind", then "*/backing", then "*"."""
    for k in (f"{kind}/{backing}", kind, f"*/{backing}", "*"):
        if k in table:
            return table[k]
    return None


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def _walk_ns(b: dict, key: str, runs: list[res.Result]) -> list[Verdict]:
    """p50 (stat) of walk duration / entries per walk kind. A kind whose
    walks cover fewer than scope.min_entries entries (median) is not judged:
    there the fixed per-walk cost (syscalls, one ioctl or seq_file buffer
    per VMA, the process's own ~100 VMAs) is most of the walk, and
    walk-cost-fit judges the cost per entry (its slope) across sizes."""
    out = []
    by_kind: dict[str, list[float]] = {}
    ents: dict[str, list[float]] = {}
    for r in runs:
        for w in res.good_walks(r):
            ptes = w.ptes or 0   # good walks have entries
            by_kind.setdefault(w.kind.value, []).append(w.duration_ns / ptes)
            ents.setdefault(w.kind.value, []).append(float(ptes))
    q = QUANTILES[b.get("stat", "p50")]
    backing = runs[0].scenario.backing.value
    min_entries = _scope(b).get("min_entries", 0)
    for kind, xs in sorted(by_kind.items()):
        limit = _limit(b["max"], kind, backing)
        if limit is None or _median(ents[kind]) < min_entries:
            continue
        v = stats.quantile(xs, q)
        out.append(Verdict(f"{b['id']}[{kind}]", key, PASS if v <= limit else FAIL,
                           f"{b.get('stat', 'p50')} {v:.1f} ns/entry over {len(xs)} walks",
                           f"<= {limit} ns/entry"))
    return out


def busy_periods(walks: list[res.Walk], gap_ns: float) -> list[float]:
    """For each walk, the length of the busy period it belongs to: walks
    that follow each other within gap_ns (cadvisor's smaps then clear_refs,
    or a walk that overran its interval into the next) form one period, and
    a waiter queued behind one of them can wait for all of them."""
    order = sorted(range(len(walks)), key=lambda i: walks[i].start_ns)
    out = [0.0] * len(walks)
    group: list[int] = []
    end = -1.0
    for i in order + [-1]:
        if i == -1 or (group and walks[i].start_ns - end > gap_ns):
            if group:
                length = end - walks[group[0]].start_ns
                for j in group:
                    out[j] = float(length)
            group = []
            if i == -1:
                break
        group.append(i)
        end = max(end, walks[i].start_ns + walks[i].duration_ns)
    return out


def spanned_walks(r: res.Result) -> dict[int, float]:
    """Per walk index: the longest total duration of the walks that one of
    its attributed stalls overlapped (kernel_view.stalls). A writer queued
    behind a walk that drops the lock between holds can wait on into the
    next walk when it does not get to run (the walker takes the lock back
    first: module/KERNEL-FACTS.md entry 20), and its walk-held part is then
    the union of both walks' holds."""
    spans = sorted((w.start_ns, w.start_ns + w.duration_ns) for w in r.walks if w.duration_ns)
    out: dict[int, float] = {}
    for st in split.stalls(r) or ():
        wi, t0, dt = st.walk, st.start_ns, st.wait_ns
        if wi is None or not dt:
            continue
        t1 = t0 + dt
        total = float(sum(e - b for b, e in spans if b < t1 and e > t0))
        out[wi] = max(out.get(wi, 0.0), total)
    return out


def _stall_vs_walk(b: dict, key: str, runs: list[res.Result]) -> list[Verdict]:
    """The walker-held part of each walk's attributed stalls (split.py) is
    at most factor x the busy period of back-to-back walks it belongs to +
    slack, or, when the stall's wait overlapped more walks than that, of
    the walks it overlapped (spanned_walks). The rest of a wait (other
    holders, a waiter that was not running) is not the walk's doing: an
    INFO line, never a FAIL. Walks without the split are judged on the
    whole wait, as before the split."""
    worst: tuple[float, res.Walk, float, res.Result, float | None] | None = None
    n = unsplit = 0
    for r in runs:
        walks = res.good_walks(r)
        periods = busy_periods(walks, b.get("gap_ns", 1_000_000))
        spanned = spanned_walks(r)
        periods = [max(p, spanned.get(w.index, 0.0)) for w, p in zip(walks, periods)]
        for w, period in zip(walks, periods):
            if w.max_stall_ns is None:
                continue
            n += 1
            held = split.walk_held(r, w)
            unsplit += held is None
            judged = w.max_stall_ns if held is None else held
            excess = judged - (b["factor"] * period + b["slack_ns"])
            if worst is None or excess > worst[0]:
                worst = (excess, w, period, r, held)
    if worst is None:
        backends = sorted({r.backend.value for r in runs})
        return [Verdict(b["id"], key, SKIP, "no attributed stalls",
                        f"<= {b['factor']}x walk + {fmt_ns(b['slack_ns'])}",
                        f"backend {', '.join(backends)} does not attribute stalls")]
    excess, w, period, r, held = worst
    whole = float(w.max_stall_ns or 0)   # a walk without max_stall_ns is not judged above
    what = (f"worst stall {fmt_ns(whole)}" if held is None else
            f"worst walk-held stall {fmt_ns(held)} (whole wait {fmt_ns(whole)})")
    note = (split.UNAVAILABLE if unsplit == n else
            f"{split.UNAVAILABLE} for {unsplit} of {n} walks: whole wait judged"
            if unsplit else "")
    out = [Verdict(b["id"], key, PASS if excess <= 0 else FAIL,
                   f"{what} behind {fmt_ns(period)} of back-to-back walks "
                   "or walks its wait spanned "
                   f"({w.kind.value} {fmt_ns(w.duration_ns)}; {n} walks)",
                   f"<= {b['factor']}x walks + {fmt_ns(b['slack_ns'])}",
                   "; ".join(x for x in (note, f"{r.path.name} iteration {w.iteration}")
                             if x))]
    ws = split.worst_split(runs)
    if ws:
        x = ws[0]
        out.append(Verdict(b["id"], key, INFO,
                           f"longest attributed wait {fmt_ns(x.wait)}: the host kept the "
                           f"waiter off CPU or waking for {fmt_ns(x.free)} (free), other "
                           f"holders {fmt_ns(x.others)}, the walk held {fmt_ns(x.held)}"
                           + (f" (walker off CPU {fmt_ns(x.off_cpu)} of it)"
                              if x.off_cpu else "")
                           + (f" (the waiter runnable but not on a CPU for "
                              f"{fmt_ns(x.runnable)} of it)" if x.runnable else ""),
                           "not judged", f"{x.run}, {x.kind}"))
    return out


def _too_few(n: int, q: float) -> bool:
    """A quantile q of fewer than 1/(1-q) samples is just the maximum."""
    return q < 1.0 and n * (1.0 - q) < 1.0 - 1e-9


def _ordinal(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def _share_text(v: str, qname: str, sh: split.Share, raw: float, n: int) -> str:
    return (f"{v} {qname} during walks, the walk's share "
            f"{'<= ' if sh.bound else ''}{fmt_ns(sh.value)} (the {_ordinal(sh.k)} largest "
            f"walk-held part of {sh.stalls} stalls), "
            f"raw {fmt_ns(raw)} ({n:,} ops)")


def _victim_vs_walk(b: dict, key: str, runs: list[res.Result]) -> list[Verdict]:
    """A victim's latency quantile during walks (merged histograms of all
    runs): the walk's share of it (split.victim_share: what the walker held
    of the victim's stalls) may be factor x the longest walk + slack.
    Without the split, the raw quantile may be that or as slow as the same
    quantile outside walks (host noise is not the walk's doing)."""
    out: list[Verdict] = []
    qname = b.get("quantile", "max")
    q = QUANTILES[qname]
    walks = [w for r in runs for w in res.good_walks(r)]
    if not walks:
        return out
    wmax = max(w.duration_ns for w in walks)
    for v in b["victims"]:
        vn = res.VictimName(v)
        during = res.victim_hist(runs, vn, "during")
        outside = res.victim_hist(runs, vn, "outside")
        d, o = hist.quantile(during, q), hist.quantile(outside, q) or 0
        if d is None:
            continue
        n = hist.total(during)
        if _too_few(n, q):
            out.append(Verdict(f"{b['id']}[{v}]", key, SKIP,
                               f"{n} {v} ops during walks",
                               f"{qname} needs >= {round(1 / (1 - q))} ops",
                               f"{qname} of so few is the max ({fmt_ns(d)})"))
            continue
        walk_limit = b["factor"] * wmax + b["slack_ns"]
        sh = split.victim_share(runs, vn, q, n)
        if sh is not None:
            out.append(Verdict(f"{b['id']}[{v}]", key, PASS if sh.value <= walk_limit else FAIL,
                               _share_text(v, qname, sh, d, n) + f", longest walk "
                               f"{fmt_ns(wmax)}, {qname} outside {fmt_ns(o)}",
                               f"share <= {b['factor']}x walk + {fmt_ns(b['slack_ns'])}"))
            continue
        allowed = max(walk_limit, o)
        out.append(Verdict(f"{b['id']}[{v}]", key, PASS if d <= allowed else FAIL,
                           f"{v} {qname} during {fmt_ns(d)} ({n:,} ops), "
                           f"longest walk {fmt_ns(wmax)}, {qname} outside {fmt_ns(o)}",
                           f"<= max({b['factor']}x walk + {fmt_ns(b['slack_ns'])}, "
                           f"{qname} outside)", f"{split.UNAVAILABLE}: raw quantile judged"))
    return out


def _victim_quantile(b: dict, key: str, runs: list[res.Result]) -> list[Verdict]:
    """Latency quantile of a victim during walks (merged histograms of all
    runs) against max_ns, or against max_ns_per_gib x GiB mapped + slack_ns
    (walks, and so the waits behind them, grow with the mapping): the
    walk's share of it (split.victim_share) when the results split their
    stalls, else the raw quantile."""
    v = b["victim"]
    h = res.victim_hist(runs, res.VictimName(v), "during")
    q = QUANTILES[b["quantile"]]
    val = hist.quantile(h, q)
    if val is None:
        return []
    n = hist.total(h)
    if _too_few(n, q):
        return [Verdict(b["id"], key, SKIP, f"{n} {v} ops during walks",
                        f"{b['quantile']} needs >= {round(1 / (1 - q))} ops",
                        f"{b['quantile']} of so few is the max ({fmt_ns(val)})")]
    if "max_ns" in b:
        limit, limit_s = float(b["max_ns"]), f"<= {fmt_ns(b['max_ns'])}"
    else:
        gib = runs[0].scenario.size_bytes / (1 << 30)
        limit = b["max_ns_per_gib"] * gib + b.get("slack_ns", 0)
        limit_s = (f"<= {fmt_ns(b['max_ns_per_gib'])}/GiB x {gib:.3g} GiB + "
                   f"{fmt_ns(b.get('slack_ns', 0))} = {fmt_ns(limit)}")
    sh = split.victim_share(runs, res.VictimName(v), q, n)
    if sh is not None:
        return [Verdict(b["id"], key, PASS if sh.value <= limit else FAIL,
                        _share_text(v, b["quantile"], sh, val, n), "share " + limit_s)]
    return [Verdict(f"{b['id']}", key, PASS if val <= limit else FAIL,
                    f"{v} {b['quantile']} during walks {fmt_ns(val)} ({n:,} ops)",
                    limit_s, f"{split.UNAVAILABLE}: raw quantile judged")]


def _thp_leaf_points(runs: list[res.Result], release: str, kind: res.WalkKind
                     ) -> tuple[list[float], list[float]] | None:
    """THP runs of a kind: per run, the median PMD leaves of its walks and
    its fastest walk; None when a walk does not report pmd_leaves."""
    xs, ys = [], []
    for r in runs:
        if r.release != release or r.scenario.backing != res.Backing.thp:
            continue
        ws = [w for w in res.good_walks(r) if w.kind == kind]
        if not ws:
            continue
        leaves = [w.pmd_leaves for w in ws]
        if any(x is None for x in leaves):
            return None
        xs.append(_median([float(x or 0) for x in leaves]))
        ys.append(min(float(w.duration_ns) for w in ws))
    return xs, ys


def _cost_fit(b: dict, key: str, runs: list[res.Result]) -> list[Verdict]:
    """Across sizes, per walk kind and backing: the least-squares fit of
    each run's fastest walk against entries (fit.py: the selftests' own fit
    code, selftests/ptwalk_fit.c; the fastest walk, as the selftests take
    the minimum, is the walk's own cost with the least of the host's noise)
    has a log-log slope (same fit on the logarithms: 1 = proportional,
    2 = quadratic) <= max_loglog_slope, a slope (ns per entry, fixed cost
    excluded) <= max_ns_per_entry and, when the budget sets r2_min, R² >=
    r2_min. On thp the entries are the PMD leaves of the walk: the target
    process's own ~600-900 4 KiB PTEs outnumber the leaves of any size a
    host holds (two decades of entries would take ~180 GiB of THP), so
    they go to the fixed cost and the slope is ns per PMD leaf; no verdict
    below scope.thp_min_pmd_leaves (the largest run's leaves). SKIP when
    the sizes span less than a decade: such a fit says nothing about
    scaling."""
    from . import fit as fitmod
    from .fit import DECADE
    from .report import cost_groups
    out = []
    for g in cost_groups(runs):
        kind, backing = g.kind.value, g.backing.value
        limit = _limit(b["max_ns_per_entry"], kind, backing)
        bid, scen = f"{b['id']}[{kind}]", f"{kind}/{backing} across sizes"
        thp = g.backing == res.Backing.thp
        unit, units = ("PMD leaf", "PMD leaves") if thp else ("entry", "entries")
        lim_s = (f"log-log slope <= {b['max_loglog_slope']}, slope <= {limit} ns/{unit}"
                 + (f", R² >= {b['r2_min']}" if "r2_min" in b else ""))
        if limit is None:
            continue
        xs = [p.entries for p in g.runs]
        f = g.fastest_fit
        if thp:
            pts = _thp_leaf_points(runs, g.release, g.kind)
            if pts is None:
                out.append(Verdict(bid, scen, SKIP, f"{len(g.runs)} runs", lim_s,
                                   "walks do not report pmd_leaves"))
                continue
            xs = pts[0]
            if max(xs, default=0) < _scope(b).get("thp_min_pmd_leaves", 0):
                continue    # the leaves' cost is below the fixed cost's noise: no verdict
            f = fitmod.fit(*pts) if min(xs, default=0) > 0 else None
        if f is None or not f.extrapolates:
            out.append(Verdict(bid, scen, SKIP, f"{len(g.runs)} runs, {units} span "
                               f"{max(xs) / max(min(xs), 1):.1f}x", lim_s,
                               "needs >= 3 runs" if len(xs) < 3 else
                               f"needs sizes spanning >= {DECADE:.0f}x"))
            continue
        exp = f.exponent if f.exponent is not None else float("inf")
        ok = f.r2 >= b.get("r2_min", -math.inf) and f.b <= limit and exp <= b["max_loglog_slope"]
        out.append(Verdict(bid, scen, PASS if ok else FAIL,
                           f"fastest walk {fmt_ns(f.a)} + {f.b:.2f} ns x {unit}, R² {f.r2:.3f}, "
                           f"log-log slope {exp:.2f} over "
                           f"{f.n} runs, {min(xs):,.0f}-{max(xs):,.0f} {units} "
                           f"({max(xs) / min(xs):.0f}x)", lim_s))
    return out


ACROSS_SIZES = {"cost_fit"}   # checked once over every scenario's results


def _stall_vs_hold(b: dict, key: str, runs: list[res.Result]) -> list[Verdict]:
    from . import holds
    return holds.check(b, key, runs, Verdict)


CHECKS: dict[str, Callable[[dict, str, list[res.Result]], list[Verdict]]] = {
    "complete": _complete,
    "walk_ns_per_entry": _walk_ns,
    "stall_vs_walk": _stall_vs_walk,
    "stall_vs_hold": _stall_vs_hold,
    "victim_during_vs_walk": _victim_vs_walk,
    "victim_during_quantile": _victim_quantile,
    "cost_fit": _cost_fit,
}


def _scope(b: dict) -> dict[str, Any]:
    sc = b.get("scope") or {}
    return sc if isinstance(sc, dict) else {}


def planned_walks(runs: list[res.Result]) -> int:
    """Scanner iterations the scenario's runs were asked for: duration /
    interval summed over runs (what the plan gives, not what a slow host
    managed; cadvisor walks twice per iteration)."""
    n = 0
    for r in runs:
        n += r.scenario.planned_walk_intervals
    return n


def lock_units(runs: list[res.Result]) -> set[str] | None:
    """How the scenario's walk kinds hold mmap_lock, as the result says
    (stall_estimate.kinds.KIND.lock_unit, from ptwalk's own table); None
    when a result does not say."""
    units: set[str] = set()
    for r in runs:
        est = r.stall_estimate.kinds if r.stall_estimate is not None else {}
        for kind in {w.kind for w in res.good_walks(r)}:
            k = est.get(kind)
            if k is None:
                return None
            units.add(k.lock_unit.value)
    return units


def out_of_scope(b: dict, runs: list[res.Result]) -> str | None:
    """Why budget b does not apply to this scenario, or None when it does.
    scope members (all must hold): profiles, backings (lists), lock_units
    (every walk kind of the scenario holds mmap_lock in one of these;
    a result that does not say is in scope), min_size_mib (the mapping),
    min_walks (planned scanner iterations over the scenario's runs).
    min_entries is per walk kind, applied by the check itself."""
    sc = _scope(b)
    if not sc or not runs:
        return None
    scen = runs[0].scenario
    for member, field, value in (("profiles", "profile", scen.profile.value),
                                 ("backings", "backing", scen.backing.value)):
        if member in sc and value not in sc[member]:
            return f"{field} {value} not in {sc[member]}"
    if "lock_units" in sc:
        units = lock_units(runs)
        if units is not None and not units <= set(sc["lock_units"]):
            return f"lock units {sorted(units)} not all in {sc['lock_units']}"
    if scen.size_bytes < sc.get("min_size_mib", 0) << 20:
        return f"{scen.size_bytes >> 20} MiB < {sc['min_size_mib']} MiB"
    if "min_walks" in sc and planned_walks(runs) < sc["min_walks"]:
        return f"{planned_walks(runs)} planned walks < {sc['min_walks']}"
    return None


def evaluate(budgets: list[dict[str, Any]], results: list[res.Result],
             scoped: list[tuple[str, str, str]] | None = None) -> list[Verdict]:
    """Verdicts of every budget over every scenario it applies to; the
    (budget, scenario, reason) pairs a scope leaves out go to scoped."""
    out: list[Verdict] = []
    for key, runs in res.group(results).items():
        for b in budgets:
            if b["check"] in ACROSS_SIZES:
                continue
            use = runs if b["check"] == "complete" else [r for r in runs if r.usable]
            if not use:
                continue
            why = out_of_scope(b, use)
            if why is not None:
                if scoped is not None:
                    scoped.append((b["id"], str(key), why))
                continue
            out += CHECKS[b["check"]](b, str(key), use)
    usable = [r for r in results if r.usable]
    for b in budgets:
        if b["check"] in ACROSS_SIZES and usable:
            out += CHECKS[b["check"]](b, "across sizes", usable)
    return out


def skip_fraction(vs: list[Verdict]) -> float:
    """SKIPs among the verdicts that judge (INFO lines judge nothing)."""
    judged = [v for v in vs if v.verdict != INFO]
    return sum(1 for v in judged if v.verdict == SKIP) / len(judged) if judged else 0.0


def overall(vs: list[Verdict]) -> str:
    return FAIL if any(v.verdict == FAIL for v in vs) else PASS


def render(vs: list[Verdict]) -> str:
    lines = []
    for v in vs:
        lines.append(f"{v.verdict:4}  {v.scenario}  {v.budget}: {v.figure} (budget {v.limit})"
                     + (f" [{v.detail}]" if v.detail else ""))
    n = {k: sum(1 for v in vs if v.verdict == k) for k in (PASS, FAIL, SKIP, INFO)}
    lines.append(f"budgets: {overall(vs)} ({n[PASS]} pass, {n[FAIL]} fail, {n[SKIP]} skip"
                 f" = {skip_fraction(vs):.1%}"
                 + (f"; {n[INFO]} info, not judged" if n[INFO] else "") + ")")
    return "\n".join(lines) + "\n"


def summary(vs: list[Verdict], results: list[res.Result], budgets_path: str,
            scoped: list[tuple[str, str, str]] | None = None) -> dict[str, Any]:
    backends = sorted({r.backend.value for r in results})
    details = sorted({f"{r.backend.value}: {r.backend_detail or ''}" for r in results})
    return {"schema": "ptwalk.qualify-summary/1", "verdict": overall(vs),
            "budgets": budgets_path, "backends": backends, "backend_details": details,
            "kernel": sorted({r.release for r in results}),
            "results": len(results), "complete": sum(1 for r in results if r.usable),
            "skip_fraction": round(skip_fraction(vs), 4),
            "verdicts": [asdict(v) for v in vs],
            "not_applicable": [{"budget": b, "scenario": k, "why": w}
                               for b, k, w in (scoped or [])]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="ptwalk-budgets")
    p.add_argument("inputs", nargs="+")
    p.add_argument("--budgets", default=str(layout.budgets_dir() / "default.json"))
    p.add_argument("--summary", metavar="OUT.json")
    p.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE",
                   help="extra member of the summary (repeatable)")
    args = p.parse_args(argv)
    try:
        budgets = load_budgets(Path(args.budgets))
        results = res.load(args.inputs)
    except res.InputError as e:
        print(f"budgets: error: {e}", file=sys.stderr)
        return 2
    scoped: list[tuple[str, str, str]] = []
    vs = evaluate(budgets, results, scoped)
    sys.stdout.write(render(vs))
    if scoped:
        print(f"not applicable by scope: {len(scoped)} (budget, scenario) pairs "
              "(summary.json not_applicable)")
    print("backend: " + ", ".join(sorted({r.backend.value for r in results})))
    if args.summary:
        doc = summary(vs, results, args.budgets, scoped)
        doc.update(kv.split("=", 1) for kv in args.meta if "=" in kv)
        Path(args.summary).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return 1 if overall(vs) == FAIL else 0


if __name__ == "__main__":
    sys.exit(main())
