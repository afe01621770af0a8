"""Markdown report + PNG plots from a set of ptwalk results
(scripts/ptwalk-report). Every figure in a plot is also in a table."""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import fit as fitmod
from . import hist, split
from . import results as res
from .compare import fmt_ns
from .stall_predict import _pi, _size, measured_stall, predict_stall
from .walk_kinds import UNIT_TEXT, LockUnit

GIB = 1 << 30
MIB = 1 << 20
TARGETS = (("100 GiB", 100 * GIB), ("1 TiB", 1024 * GIB))   # interval guidance (sizes)
ENTRY_TARGETS = (("25M", 25_000_000), ("250M", 250_000_000))  # extrapolation (PTE counts)
TAIL = 1e-4            # p99.99
EXTRA_TAIL = 1e-5      # walks may add at most 10% to the mass above p99.99


def release_key(rel: str) -> list[tuple[int, str]]:
    """Sort 6.9 before 6.18."""
    return [(int(x), "") if x.isdigit() else (-1, x) for x in re.findall(r"\d+|[^\d.]+", rel)]


def slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s).strip("_")


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


@dataclass
class RunPoint:
    """One run's figures for one walk kind: the run is the unit of replication."""
    name: str
    size_bytes: int
    aliased: bool
    entries: float               # median entries per walk
    duration: float              # median walk duration, ns
    worst_stall: float | None    # longest attributed stall of the run (lock-aware backends)
    walks: int
    fastest: float = 0.0         # shortest walk duration, ns: the least disturbed walk
    worst_held: float | None = None   # walker-held part of its stalls (split.py), if split
    estimate: res.KindEstimate | None = None   # stall_estimate.kinds.KIND of the run
    layout: tuple[str, int, int] | None = None   # stall_estimate: text, VMAs, largest VMA


@dataclass
class CostGroup:
    release: str
    kind: res.WalkKind
    backing: res.Backing
    xs: list[float]          # entries per walk (every walk, for the plots)
    ys: list[float]          # duration ns per walk
    runs: list[RunPoint]
    entries_per_byte: float
    fit: fitmod.Fit | None = None          # run medians: duration = a + b * entries
    stall_fit: fitmod.Fit | None = None    # run worst stall = a + b * entries
    fastest_fit: fitmod.Fit | None = None  # run fastest walk = a + b * entries (budgets)
    entries_base: float = 0.0              # entries = entries_base + entries_per_byte * size
    held_fit: fitmod.Fit | None = None     # run worst walker-held part = a + b * entries

    @property
    def lock_unit(self) -> LockUnit | None:
        """How the kind holds mmap_lock (stall_estimate.kinds.KIND.lock_unit,
        the C++ table userspace/model/src/vma_layout.cpp kLocking): None when
        a run lacks it or the runs disagree; never guessed here."""
        units = {p.estimate.lock_unit if p.estimate is not None else None for p in self.runs}
        return units.pop() if len(units) == 1 and None not in units else None

    @property
    def split(self) -> bool:
        """Every run with an attributed stall has the walker-held part."""
        st = [p for p in self.runs if p.worst_stall is not None]
        return bool(st) and all(p.worst_held is not None for p in st)

    @property
    def stall_points(self) -> list[tuple[float, float]]:
        """(entries, worst stall) per run: the walk's part when split."""
        return [(p.entries, p.worst_held if self.split else p.worst_stall)  # type: ignore
                for p in self.runs if p.worst_stall is not None]

    def entries_at(self, size_bytes: float) -> float:
        return self.entries_base + self.entries_per_byte * size_bytes

    @property
    def span(self) -> float:
        xs = [r.entries for r in self.runs]
        return max(xs) / min(xs) if xs and min(xs) > 0 else 1.0

    @property
    def extrapolates(self) -> bool:
        return self.fit is not None and self.fit.extrapolates


def cost_groups(results: list[res.Result]) -> list[CostGroup]:
    acc: dict[tuple[str, res.WalkKind, res.Backing], CostGroup] = {}
    ratios: dict[tuple[str, res.WalkKind, res.Backing], list[float]] = {}
    for r in results:
        if not r.usable:
            continue
        sc = r.scenario
        by_kind: dict[res.WalkKind, list[res.Walk]] = {}
        for w in res.good_walks(r):
            by_kind.setdefault(w.kind, []).append(w)
        for kind, ws in by_kind.items():
            key = (r.release, kind, sc.backing)
            g = acc.setdefault(key, CostGroup(*key, [], [], [], 0.0))
            ptes = [float(w.ptes or 0) for w in ws]     # good walks have entries
            g.xs += ptes
            g.ys += [float(w.duration_ns) for w in ws]
            stalls = [float(w.max_stall_ns) for w in ws if w.max_stall_ns is not None]
            held = [split.walk_held(r, w) for w in ws if w.max_stall_ns is not None]
            se = r.stall_estimate
            est = se.kinds.get(kind) if se is not None else None
            g.runs.append(RunPoint(r.path.name, sc.size_bytes,
                                   sc.aliased or sc.backing == res.Backing.alias,
                                   _median(ptes),
                                   _median([float(w.duration_ns) for w in ws]),
                                   max(stalls) if stalls else None, len(ws),
                                   min(float(w.duration_ns) for w in ws),
                                   max(h for h in held if h is not None)
                                   if held and None not in held else None,
                                   est,
                                   (se.layout or "?", se.layout_vmas or 1,
                                    se.layout_largest_vma_bytes or 0)
                                   if se is not None and est is not None else None))
            ratios.setdefault(key, []).extend(x / max(1, sc.size_bytes) for x in ptes)
    for key, g in acc.items():
        g.entries_per_byte = sum(ratios[key]) / len(ratios[key])
        # with several sizes: the process's own entries apart from those per byte
        ef = fitmod.linear([p.size_bytes for p in g.runs], [p.entries for p in g.runs])
        if ef is not None and ef.b > 0:
            g.entries_base, g.entries_per_byte = max(ef.a, 0.0), ef.b
        g.fit = fitmod.fit([p.entries for p in g.runs], [p.duration for p in g.runs])
        g.fastest_fit = fitmod.fit([p.entries for p in g.runs], [p.fastest for p in g.runs])
        st = [p for p in g.runs if p.worst_stall is not None]
        g.stall_fit = fitmod.fit([p.entries for p in st],
                                 [p.worst_stall for p in st if p.worst_stall is not None]) \
            if st else None
        if g.split:  # every run of st has its worst_held then
            g.held_fit = fitmod.fit([p.entries for p in st],
                                    [p.worst_held for p in st if p.worst_held is not None])
    return [acc[k] for k in sorted(acc, key=lambda k: (k[0], k[1].value, k[2].value))]


def _span(g: CostGroup) -> str:
    return f"{g.span:.0f}x" if g.span >= fitmod.DECADE else f"{g.span:.1f}x"


def _not_extrapolated(g: CostGroup) -> str:
    return (f"not extrapolated: measured sizes span {_span(g)} "
            f"(< {fitmod.DECADE:.0f}x, a decade)")


def _q(v: Any) -> str:
    return "-" if v is None else fmt_ns(float(v))


def generate(results: list[res.Result], out: Path) -> tuple[Path, list[Path]]:
    from . import plots  # matplotlib: imported only when plotting
    out.mkdir(parents=True, exist_ok=True)
    pngs: list[Path] = []
    usable = [r for r in results if r.usable]
    groups = res.group(usable)
    releases = sorted({r.release for r in usable}, key=release_key)
    md: list[str] = ["# ptwalk report", ""]
    md += _header(results, releases)

    # --- walk cost across sizes, fit and extrapolation
    cgs = cost_groups(usable)
    md += _sizes_section(cgs)
    md += ["## Walk cost", "",
           "One point per run and walk kind: the run's median walk duration and its longest "
           "attributed mmap_lock wait (worst stall) against the entries walked (4 KiB PTEs + "
           "PMD-mapped huge leaves, including the target process's own few hundred). Fit: "
           "least squares over the runs, duration = a + b * entries (a: fixed cost per walk, "
           "b: ns per entry), the code the selftests' linearity check uses "
           "(selftests/ptwalk_fit.c); R² of that fit; log-log slope: the slope of "
           "log(duration) on log(entries) (1 = proportional). The same fit of each run's "
           "fastest walk (the least of the host's noise, as the selftests' minimum) is what "
           "the walk-cost-fit budget checks. Aliased runs are their own "
           "backing (`alias`): their cost per PTE differs from distinct pages; the anon plot "
           "shows them as crosses beside the distinct-page fit, outside it.", "",
           "| kernel | kind | backing | runs | walks | entries (span) | duration p50 | max "
           "| ns/entry p50 | fit a | fit b (ns/entry) | R² | log-log slope "
           "| fastest walk: b, R², log-log slope |",
           "| --- | --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: "
           "| ---: | --- |"]
    for g in cgs:
        s = sorted(g.ys)
        npe = sorted(y / x for x, y in zip(g.xs, g.ys))
        xs = [p.entries for p in g.runs]
        ent = f"{min(xs):,.0f}-{max(xs):,.0f} ({_span(g)})"
        f = g.fit
        fit_cols = (f"{fmt_ns(f.a)} | {f.b:.2f} | {f.r2:.3f} | "
                    + ("-" if f.exponent is None else f"{f.exponent:.2f}")) if f else \
            "- | - | - | -"
        ff = g.fastest_fit
        fast = (f"{ff.b:.2f}, {ff.r2:.3f}, "
                + ("-" if ff.exponent is None else f"{ff.exponent:.2f}")) if ff else "-"
        md.append(f"| {g.release} | {g.kind.value} | {g.backing.value} | {len(g.runs)} "
                  f"| {len(g.ys)} "
                  f"| {ent} | {fmt_ns(s[len(s) // 2])} | {fmt_ns(s[-1])} "
                  f"| {npe[len(npe) // 2]:.1f} | {fit_cols} | {fast} |")
    md.append("")
    by_backing: dict[res.Backing, list[CostGroup]] = {}
    for g in cgs:
        by_backing.setdefault(g.backing, []).append(g)
    alias = {(g.release, g.kind): g for g in by_backing.get(res.Backing.alias, [])}
    for backing, gs in sorted(by_backing.items(), key=lambda x: x[0].value):
        series = [plots.CostSeries(g.kind.value
                                   + (f" ({g.release})" if len(releases) > 1 else ""),
                                   g.xs, g.ys, [p.entries for p in g.runs],
                                   [p.duration for p in g.runs],
                                   g.stall_points, g.fit,
                                   (g.held_fit if g.split else g.stall_fit)
                                   if g.lock_unit in (LockUnit.whole_walk, None) else None,
                                   [(p.entries, p.duration, p.worst_stall)
                                    for p in alias[(g.release, g.kind)].runs]
                                   if backing == res.Backing.anon and (g.release, g.kind) in alias
                                   else []) for g in gs]
        p = plots.walk_cost(out / f"walk_cost_{slug(backing.value)}.png",
                            f"walk cost across sizes, {backing.value} backing"
                            + (" (ALIASED pages)" if backing == res.Backing.alias else ""),
                            series, [x for _, x in ENTRY_TARGETS])
        pngs.append(p)
        md.append(f"![walk cost {backing.value}]({p.name})")
    md.append("")

    # --- extrapolation
    md += ["## Extrapolation", "",
           f"Predicted walk duration (a run's median walk) and worst attributed stall of a run at "
           f"{' and '.join(lbl for lbl, _ in ENTRY_TARGETS)} entries (the incident's 100 GiB "
           f"of 4 KiB pages is 26.2M PTEs; 1 TiB 268M), from the fit over the runs. Brackets: "
           f"95% prediction interval of one new run (t quantile with runs - 2 degrees of "
           f"freedom, scipy.stats). A fit is extrapolated only when its measured sizes span "
           f"a decade or more (largest / smallest entries >= {fitmod.DECADE:.0f}); otherwise "
           f"the figure is not extrapolated. Worst stall: the walk's part of it (walk held, "
           f"see Worst stalls below), extrapolated in the unit the kind holds mmap_lock by "
           f"(`stall_estimate.kinds.KIND.lock_unit`, the table the C++ side uses): a whole "
           f"walk (clear_refs) grows linearly with the entries; a 2 MiB range (pagemap) "
           f"stays flat at the longest hold of one range; per-VMA units (smaps_rollup, "
           f"smaps' read(), PAGEMAP_SCAN) take the walk of the largest VMA of the layout the "
           f"run named (`--vma-layout`): the whole walk for one VMA per mapping, flat for "
           f"VMAs of a fixed size. A result without the unit is not extrapolated; one "
           f"without the split extrapolates the whole wait and says so. The upper bound of "
           f"an interval is the figure to plan with.", "",
           "| kernel | kind | backing | runs | measured entries | entries | walk duration "
           "[95% PI] | predicted worst stall (walk's part) | lock held per "
           "| measured max stall |",
           "| --- | --- | --- | ---: | --- | ---: | --- | --- | --- | --- |"]
    for g in cgs:
        xs = [p.entries for p in g.runs]
        meas = f"{min(xs):,.0f}-{max(xs):,.0f} ({_span(g)})"
        unit = UNIT_TEXT[g.lock_unit] if g.lock_unit is not None else "unknown"
        if not g.extrapolates:
            md.append(f"| {g.release} | {g.kind.value} | {g.backing.value} | {len(g.runs)} "
                      f"| {meas} | - "
                      f"| {_not_extrapolated(g)} | - | {unit} | {measured_stall(g)} |")
            continue
        for label, x in ENTRY_TARGETS:
            md.append(f"| {g.release} | {g.kind.value} | {g.backing.value} | {len(g.runs)} "
                      f"| {meas} "
                      f"| {label} | {_pi(g.fit, x)} | {predict_stall(g, x).text} | {unit} "
                      f"| {measured_stall(g)} |")
    md.append("")
    md += worst_stalls_section(groups)
    md += _incident_check(usable, cgs)

    # --- victims
    plotted = _plotted_keys(groups)
    md += ["## Victim latency outside vs during walks", "",
           "From the merged histograms of every run of a scenario (quantiles are bucket "
           "upper bounds, <= 0.8% above the sample). Plots (here and under Timelines): "
           "for each profile and backing the scenario with the most runs (then the largest "
           "size); the other sizes of the sweep are in the tables.", "",
           "| scenario | victim | phase | ops | p50 | p99 | p99.9 | p99.99 | max |",
           "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for key, runs in groups.items():
        vics = []
        for v in key.victims:
            o, d = res.victim_hist(runs, v, "outside"), res.victim_hist(runs, v, "during")
            vics.append((v.value, o, d))
            for phase, h in (("outside", o), ("during", d)):
                qs = [hist.quantile(h, q) for q in (0.5, 0.99, 0.999, 0.9999, 1.0)]
                md.append(f"| {key} | {v.value} | {phase} | {hist.total(h):,} | "
                          + " | ".join(_q(x) for x in qs) + " |")
        if vics and key in plotted:
            p = plots.victim_cdfs(out / f"victims_{slug(str(key))}.png",
                                  f"{key} ({len(runs)} runs)", vics)
            pngs.append(p)
    md.append("")
    md += [f"![victims {k}](victims_{slug(str(k))}.png)" for k in groups
           if k.victims and k in plotted] + [""]

    # --- interval / THP guidance
    md += _interval_section(groups, cgs)

    # --- timelines
    md += ["## Timelines", "", "First run of each scenario: walks, and the mmap_lock waits "
           "of victims attributed to them (lock-aware backends).", ""]
    for key, runs in groups.items():
        if key not in plotted:
            continue
        r = runs[0]
        walks = res.good_walks(r)
        if not walks:
            continue
        t0 = r.scan_start_ns if r.scan_start_ns is not None else walks[0].start_ns
        p = plots.timeline(out / f"timeline_{slug(str(key))}.png",
                           f"{key}: {r.path.name} ({r.backend.value})", t0, walks, r.stalls)
        pngs.append(p)
        md.append(f"![timeline {key}]({p.name})")
    md.append("")

    # --- across kernels
    if len(releases) > 1:
        md += _kernels_section(cgs, releases, out, pngs)
    path = out / "report.md"
    path.write_text("\n".join(md) + "\n", encoding="utf-8")
    return path, pngs


def worst_stalls_section(groups: dict[res.ScenarioKey, list[res.Result]],
                         n: int = 3) -> list[str]:
    """The longest attributed waits of each scenario, split into the walk's
    part and the rest (results/SCHEMA.md kernel_view.stalls)."""
    md = ["## Worst stalls: walk held / other holders / free", "",
          "Each attributed mmap_lock wait is split: walk held (the walker held the lock in a "
          "mode that excluded the waiter: the walk's doing), other holders (other tasks "
          "held it), free (neither: the lock was free and the waiter not yet running: "
          "waking, runnable, on a busy host). The three sum to the wait. Walker off CPU: "
          "the part of the walk's hold the walker itself was not running. The budgets "
          "judge the walk's part.", "",
          "| scenario | kind | wait | walk held | other holders | free | walker off CPU "
          "| run |", "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    unavailable = []
    for key, runs in groups.items():
        ws = split.worst_split(runs, n=n)
        if not ws:
            if any(split.stalls(r) for r in runs):
                unavailable.append(str(key))
            continue
        for x in ws:
            md.append(f"| {key} | {x.kind} | {fmt_ns(x.wait)} | {fmt_ns(x.held)} "
                      f"({100 * x.held / x.wait if x.wait else 0:.0f}%) | {fmt_ns(x.others)} "
                      f"| {fmt_ns(x.free)} | {_q(x.off_cpu)} | {x.run} |")
    if unavailable:
        md += ["", f"{split.UNAVAILABLE[0].upper() + split.UNAVAILABLE[1:]} (the results' "
               f"views did not split their waits): " + ", ".join(unavailable) + "."]
    return md + [""]


def _incident_check(results: list[res.Result], cgs: list[CostGroup]) -> list[str]:
    """Aliased runs at incident scale against what the distinct-page fit of
    the same kind predicts at their entries: the extrapolation checked."""
    by = {(g.release, g.kind, g.backing): g for g in cgs}
    rows = []
    for g in cgs:
        if g.backing != res.Backing.alias:
            continue
        ref = by.get((g.release, g.kind, res.Backing.anon))
        x = _median([p.entries for p in g.runs])
        raw = _median([p.duration for p in g.runs])
        corr = [w.ns_per_pte_corrected * (w.ptes or 0) for r in results
                if r.release == g.release and r.scenario.backing == res.Backing.alias
                for w in res.good_walks(r)
                if w.kind == g.kind and w.ns_per_pte_corrected is not None]
        pred = (_pi(ref.fit, x) if ref is not None and ref.extrapolates else
                "no distinct fit spanning a decade")
        rows.append(f"| {g.release} | {g.kind.value} | {x:,.0f} | {fmt_ns(raw)} | "
                    f"{fmt_ns(_median(corr)) if corr else '-'} | {pred} |")
    if not rows:
        return []
    return ["Check at incident scale: aliased runs (walk duration p50, raw and corrected by "
            "the run's own distinct/aliased calibration) against the distinct-page (anon) "
            "fit at the same entries.", "",
            "| kernel | kind | aliased entries | measured p50 (aliased) | corrected for "
            "distinct pages | distinct fit [95% PI] |",
            "| --- | --- | ---: | ---: | ---: | --- |"] + rows + [""]


def _plotted_keys(groups: dict[res.ScenarioKey, list[res.Result]]) -> set[res.ScenarioKey]:
    """One scenario per (profile, backing) gets latency plots and a timeline:
    the one with the most runs, then the largest size (a sweep adds sizes,
    not plots)."""
    best: dict[tuple[res.Profile, res.Backing], res.ScenarioKey] = {}
    for key, runs in groups.items():
        k = (key.profile, key.backing)
        b = best.get(k)
        if b is None or (len(runs), key.size_bytes) > (len(groups[b]), b.size_bytes):
            best[k] = key
    return set(best.values())


def _sizes_section(cgs: list[CostGroup]) -> list[str]:
    """Which sizes were measured, per backing, and whether distinct or aliased."""
    md = ["## Sizes measured", "",
          "Distinct: every page of the mapping is its own memory. Aliased: one memfd "
          "mapped again and again (incident-scale page tables on a small host; the walk "
          "is real, the page-cache footprint is not, and the cost per PTE differs).", "",
          "| backing | size | pages | runs | entries p50 |",
          "| --- | --- | --- | ---: | ---: |"]
    rows: dict[tuple[str, int, bool], list[RunPoint]] = {}
    for g in cgs:
        for p in g.runs:
            rows.setdefault((g.backing.value, p.size_bytes, p.aliased), []).append(p)
    for (backing, size, aliased), ps in sorted(rows.items()):
        names = {p.name for p in ps}
        md.append(f"| {backing} | {_size(size)} | {'aliased' if aliased else 'distinct'} "
                  f"| {len(names)} | {_median([p.entries for p in ps]):,.0f} |")
    return md + [""]


def _header(results: list[res.Result], releases: list[str]) -> list[str]:
    usable = [r for r in results if r.usable]
    hosts = sorted({f"{r.host.hostname or '?'} ({r.host.cpu_model or '?'}, "
                    f"{r.host.cpus if r.host.cpus is not None else '?'} CPUs)" for r in usable})
    backends = sorted({f"{r.backend.value}: {r.backend_detail or ''}" for r in usable})
    md = [f"{len(results)} results ({len(usable)} complete), kernels: {', '.join(releases)}; "
          f"hosts: {'; '.join(hosts)}.", "", "Backends in use:", ""]
    md += [f"- {b}" for b in backends]
    fallbacks = sorted({r.backend_fallback for r in usable if r.backend_fallback is not None})
    md += [f"- fallback: {f}" for f in fallbacks]
    bad = [r for r in results if not r.usable]
    if bad:
        md += ["", "Left out (incomplete or failed):", ""]
        md += [f"- {r.path}: {r.error or r.interrupted or 'incomplete'}"
               for r in bad]
    lost = [r for r in usable if r.kernel_view is not None and r.kernel_view.lost_events]
    if lost:
        md += ["", f"{len(lost)} results lost tracepoint events: their lock figures are partial."]
    return md + [""]


def _interval_section(groups: dict[res.ScenarioKey, list[res.Result]],
                      cgs: list[CostGroup]) -> list[str]:
    md = ["## Scan interval and page size that keep a victim's p99.99 unaffected", "",
          "Method. In a scan interval T the scanner's walks take W (the sum over the walk "
          "kinds of one interval, predicted from the fit at the target size). A victim "
          "operation overlaps a walk with probability d = W / T. Of the operations that "
          "overlapped a walk, a share q was slower than the victim's undisturbed p99.99 "
          "(measured: merged 'during' histogram against the 'outside' p99.99). Walks thus "
          "add d * q of operations above the undisturbed p99.99, which holds 1e-4 of them. "
          "We call p99.99 unaffected when walks add at most 10% to that tail: "
          "d * q <= 1e-5, so T >= W * q / 1e-5. This is the shortest interval (most "
          "frequent monitoring) that is safe; every longer interval is safe too. When no "
          "overlapping operation was slow (q = 0) the bound uses q < 3/n (rule of three, "
          "n = overlapping operations), marked '≤'. Assumes q does not grow with the walk "
          "(it depends on which lock the walk holds, not for how long) and a stall never "
          "exceeds its walk. Compare the rows of the 4 KiB backings (anon, shmem) with "
          "thp for the page-size choice.", "",
          "| scenario | victim | q | size | W per interval | shortest safe interval |",
          "| --- | --- | ---: | --- | ---: | ---: |"]
    by = {(g.release, g.kind, g.backing): g for g in cgs}
    skipped: list[str] = []
    for key, runs in groups.items():
        rel = runs[0].release
        kinds = sorted({w.kind for r in runs for w in res.good_walks(r)}, key=lambda k: k.value)
        gs = [by.get((rel, k, key.backing)) for k in kinds]
        if not kinds or any(g is None or not g.extrapolates for g in gs):
            skipped.append(str(key))
            continue
        # walks per interval of each kind (cadvisor: one smaps + one clear_refs)
        per_iter = {k: max(1.0, sum(1 for r in runs for w in res.good_walks(r)
                                    if w.kind == k)
                           / max(1, sum(len({w.iteration for w in res.good_walks(r)})
                                        for r in runs))) for k in kinds}
        for v in key.victims:
            o, d = res.victim_hist(runs, v, "outside"), res.victim_hist(runs, v, "during")
            thr = hist.quantile(o, 1 - TAIL)
            n = hist.total(d)
            if thr is None or n == 0:
                continue
            q = hist.fraction_above(d, thr)
            mark = ""
            if q == 0.0:
                q, mark = 3.0 / n, "≤ "
            for label, size in TARGETS:
                w_ns = sum(per_iter[g.kind] * g.fit.predict(g.entries_at(size))
                           for g in gs if g and g.fit)
                t_ns = w_ns * q / EXTRA_TAIL
                md.append(f"| {key} | {v.value} | {mark}{q:.2g} | {label} | {fmt_ns(w_ns)} "
                          f"| {mark}{fmt_ns(max(t_ns, w_ns))} |")
    if skipped:
        md += ["", "Left out (a walk kind's fit does not extrapolate: sizes span less than a "
               "decade): " + ", ".join(skipped) + "."]
    return md + [""]


def _kernels_section(cgs: list[CostGroup], releases: list[str], out: Path,
                     pngs: list[Path]) -> list[str]:
    from . import plots
    md = ["## Across kernels", "", "| kind/backing | " + " | ".join(releases) + " |",
          "| --- |" + " ---: |" * len(releases)]
    vals: dict[tuple[str, str], float] = {}
    names = sorted({f"{g.kind.value}/{g.backing.value}" for g in cgs})
    for g in cgs:
        npe = sorted(y / x for x, y in zip(g.xs, g.ys))
        vals[(f"{g.kind.value}/{g.backing.value}", g.release)] = npe[len(npe) // 2]
    for nme in names:
        md.append(f"| {nme} | " + " | ".join(
            f"{vals[(nme, r)]:.1f}" if (nme, r) in vals else "-" for r in releases) + " |")
    p = plots.kernel_bars(out / "kernels_ns_per_entry.png", "walk ns/entry p50 by kernel",
                          names, releases, vals, "ns per entry (p50)")
    pngs.append(p)
    return md + ["", f"![kernels]({p.name})", ""]


def parser() -> argparse.ArgumentParser:
    """ptwalk report's options: its usage and its man page (gen-man.py)."""
    p = argparse.ArgumentParser(prog="ptwalk-report",
                                description="Markdown + PNG report of ptwalk results")
    p.add_argument("inputs", nargs="+", metavar="RESULT_DIR_OR_FILES",
                   help="result files, or directories searched for them")
    p.add_argument("--out", metavar="DIR", help="output directory (default: the first "
                   "input if it is a directory, else ./ptwalk-report)")
    p.add_argument("--upstream", action="store_true",
                   help="print a 72-column plain-text report of one result for a mailing list")
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    try:
        results = res.load(args.inputs)
    except res.InputError as e:
        print(f"ptwalk-report: error: {e}", file=sys.stderr)
        return 2
    if args.upstream:
        from .upstream import render_upstream
        if len(results) != 1:
            print(f"ptwalk-report: error: --upstream wants one result, got {len(results)}",
                  file=sys.stderr)
            return 2
        sys.stdout.write(render_upstream(results[0]))
        return 0
    if not any(r.usable for r in results):
        print("ptwalk-report: error: no complete result", file=sys.stderr)
        return 2
    first = Path(args.inputs[0])
    out = Path(args.out) if args.out else (first if first.is_dir() else Path("ptwalk-report"))
    md, pngs = generate(results, out)
    print(f"wrote {md} and {len(pngs)} plots in {out}")
    return 0
