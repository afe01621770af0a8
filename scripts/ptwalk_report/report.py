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
from . import hist
from . import results as res
from .compare import fmt_ns

GIB = 1 << 30
TARGETS = (("100 GiB", 100 * GIB), ("1 TiB", 1024 * GIB))
TAIL = 1e-4            # p99.99
EXTRA_TAIL = 1e-5      # walks may add at most 10% to the mass above p99.99


def release_key(rel: str) -> list[tuple[int, str]]:
    """Sort 6.9 before 6.18."""
    return [(int(x), "") if x.isdigit() else (-1, x) for x in re.findall(r"\d+|[^\d.]+", rel)]


def slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s).strip("_")


@dataclass
class CostGroup:
    release: str
    kind: str
    backing: str
    xs: list[float]          # entries per walk
    ys: list[float]          # duration ns per walk
    stall_xs: list[float]
    stall_ys: list[float]    # attributed max stall per walk (lock-aware backends)
    entries_per_byte: float
    fit: fitmod.Fit | None = None
    stall_fit: fitmod.Fit | None = None

    def entries_at(self, size_bytes: float) -> float:
        return self.entries_per_byte * size_bytes


def cost_groups(results: list[res.Result]) -> list[CostGroup]:
    acc: dict[tuple[str, str, str], CostGroup] = {}
    ratios: dict[tuple[str, str, str], list[float]] = {}
    for r in results:
        if not r.usable:
            continue
        sc = r.doc["scenario"]
        for w in res.good_walks(r):
            key = (r.release, w["kind"], sc["backing"])
            g = acc.setdefault(key, CostGroup(*key, [], [], [], [], 0.0))
            g.xs.append(float(w["ptes"]))
            g.ys.append(float(w["duration_ns"]))
            if "max_stall_ns" in w:
                g.stall_xs.append(float(w["ptes"]))
                g.stall_ys.append(float(w["max_stall_ns"]))
            ratios.setdefault(key, []).append(w["ptes"] / max(1, sc["size_bytes"]))
    for key, g in acc.items():
        g.entries_per_byte = sum(ratios[key]) / len(ratios[key])
        g.fit = fitmod.fit(g.xs, g.ys)
        g.stall_fit = fitmod.fit(g.stall_xs, g.stall_ys) if g.stall_xs else None
    return [acc[k] for k in sorted(acc)]


def _pi(f: fitmod.Fit | None, x: float) -> str:
    if f is None:
        return "n/a"
    y, lo, hi = f.interval(x)
    if lo != lo:  # nan
        return f"{fmt_ns(y)} (no PI: too few walks)"
    return f"{fmt_ns(y)} [{fmt_ns(max(lo, 0.0))}, {fmt_ns(hi)}]"


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

    # --- walk cost and fit
    cgs = cost_groups(usable)
    md += ["## Walk cost", "",
           "One sample per walk. entries = 4 KiB PTEs + PMD-mapped huge leaves the walk "
           "visits. Fit: least squares, duration = a + b * entries (with a single measured "
           "size the model is proportional: a = 0, b = mean ns/entry).", "",
           "| kernel | kind | backing | walks | entries | duration p50 | max | ns/entry p50 "
           "| fit a | fit b (ns/entry) | model | R² |",
           "| --- | --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |"]
    for g in cgs:
        s = sorted(g.ys)
        npe = sorted(y / x for x, y in zip(g.xs, g.ys))
        ent = f"{min(g.xs):,.0f}" + (f"-{max(g.xs):,.0f}" if max(g.xs) != min(g.xs) else "")
        f = g.fit
        md.append(f"| {g.release} | {g.kind} | {g.backing} | {len(g.ys)} | {ent} "
                  f"| {fmt_ns(s[len(s) // 2])} | {fmt_ns(s[-1])} | {npe[len(npe) // 2]:.1f} "
                  f"| {fmt_ns(f.a) if f else '-'} | {f.b:.2f} | {f.model} "
                  f"| {'-' if f is None or f.r2 is None else f'{f.r2:.2f}'} |" if f else
                  f"| {g.release} | {g.kind} | {g.backing} | {len(g.ys)} | {ent} | - | - | - "
                  f"| - | - | - | - |")
    md.append("")
    for backing in sorted({g.backing for g in cgs}):
        series = [(f"{g.kind}" + (f" ({g.release})" if len(releases) > 1 else ""), g.xs, g.ys,
                   g.fit) for g in cgs if g.backing == backing]
        p = plots.walk_cost(out / f"walk_cost_{slug(backing)}.png",
                            f"walk cost, {backing} backing", series)
        pngs.append(p)
        md.append(f"![walk cost {backing}]({p.name})")
    md.append("")

    # --- extrapolation
    md += ["## Extrapolation", "",
           "Predicted duration of one walk, and the worst attributed stall, for a process "
           "mapping 100 GiB and 1 TiB with the same backing (25M / 250M entries with 4 KiB "
           "pages; with THP the entries are the measured entries per byte times the size). "
           "Brackets: 95% prediction interval of one new walk from the fit. The fit is "
           "extrapolated far beyond the measured sizes: treat it as an order of magnitude "
           "unless the measured sizes span a decade or more. Worst stall: fit of the "
           "per-walk longest attributed mmap_lock wait (lock-aware backends only); the upper "
           "bound of its interval is the figure to plan with.", "",
           "| kernel | kind | backing | measured entries | size | entries | walk duration [95% PI] "
           "| worst stall [95% PI] |",
           "| --- | --- | --- | --- | --- | ---: | --- | --- |"]
    for g in cgs:
        for label, size in TARGETS:
            x = g.entries_at(size)
            md.append(f"| {g.release} | {g.kind} | {g.backing} | {min(g.xs):,.0f}-{max(g.xs):,.0f} "
                      f"| {label} | {x:,.0f} | {_pi(g.fit, x)} | "
                      f"{_pi(g.stall_fit, x) if g.stall_fit else 'n/a (no stall attribution)'} |")
    md.append("")

    # --- victims
    md += ["## Victim latency outside vs during walks", "",
           "From the merged histograms of every run of a scenario (quantiles are bucket "
           "upper bounds, <= 0.8% above the sample).", "",
           "| scenario | victim | phase | ops | p50 | p99 | p99.9 | p99.99 | max |",
           "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for key, runs in groups.items():
        vics = []
        for v in key.victims:
            o, d = res.victim_hist(runs, v, "outside"), res.victim_hist(runs, v, "during")
            vics.append((v, o, d))
            for phase, h in (("outside", o), ("during", d)):
                qs = [hist.quantile(h, q) for q in (0.5, 0.99, 0.999, 0.9999, 1.0)]
                md.append(f"| {key} | {v} | {phase} | {hist.total(h):,} | "
                          + " | ".join(_q(x) for x in qs) + " |")
        if vics:
            p = plots.victim_cdfs(out / f"victims_{slug(str(key))}.png",
                                  f"{key} ({len(runs)} runs)", vics)
            pngs.append(p)
    md.append("")
    md += [f"![victims {k}](victims_{slug(str(k))}.png)" for k in groups if k.victims] + [""]

    # --- interval / THP guidance
    md += _interval_section(groups, cgs)

    # --- timelines
    md += ["## Timelines", "", "First run of each scenario: walks, and the mmap_lock waits "
           "of victims attributed to them (lock-aware backends).", ""]
    for key, runs in groups.items():
        r = runs[0]
        walks = res.good_walks(r)
        if not walks:
            continue
        stalls = r.doc.get("kernel_view", {}).get("stalls", []) or []
        p = plots.timeline(out / f"timeline_{slug(str(key))}.png",
                           f"{key}: {r.path.name} ({r.backend})",
                           int(r.doc.get("scan_start_ns", walks[0]["start_ns"])), walks, stalls)
        pngs.append(p)
        md.append(f"![timeline {key}]({p.name})")
    md.append("")

    # --- across kernels
    if len(releases) > 1:
        md += _kernels_section(cgs, releases, out, pngs)
    path = out / "report.md"
    path.write_text("\n".join(md) + "\n", encoding="utf-8")
    return path, pngs


def _header(results: list[res.Result], releases: list[str]) -> list[str]:
    usable = [r for r in results if r.usable]
    hosts = sorted({f"{r.doc.get('host', {}).get('hostname', '?')} "
                    f"({r.doc.get('host', {}).get('cpu_model', '?')}, "
                    f"{r.doc.get('host', {}).get('cpus', '?')} CPUs)" for r in usable})
    backends = sorted({f"{r.backend}: {r.doc.get('backend_detail', '')}" for r in usable})
    md = [f"{len(results)} results ({len(usable)} complete), kernels: {', '.join(releases)}; "
          f"hosts: {'; '.join(hosts)}.", "", "Backends in use:", ""]
    md += [f"- {b}" for b in backends]
    fallbacks = sorted({r.doc["backend_fallback"] for r in usable if "backend_fallback" in r.doc})
    md += [f"- fallback: {f}" for f in fallbacks]
    bad = [r for r in results if not r.usable]
    if bad:
        md += ["", "Left out (incomplete or failed):", ""]
        md += [f"- {r.path}: {r.doc.get('error') or r.doc.get('interrupted') or 'incomplete'}"
               for r in bad]
    lost = [r for r in usable if r.doc.get("kernel_view", {}).get("lost_events")]
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
    for key, runs in groups.items():
        rel = runs[0].release
        kinds = sorted({w["kind"] for r in runs for w in res.good_walks(r)})
        gs = [by.get((rel, k, key.backing)) for k in kinds]
        if not kinds or any(g is None or g.fit is None for g in gs):
            continue
        # walks per interval of each kind (cadvisor: one smaps + one clear_refs)
        per_iter = {k: max(1.0, sum(1 for r in runs for w in res.good_walks(r) if w["kind"] == k)
                           / max(1, sum(len({w["iteration"] for w in res.good_walks(r)})
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
                md.append(f"| {key} | {v} | {mark}{q:.2g} | {label} | {fmt_ns(w_ns)} "
                          f"| {mark}{fmt_ns(max(t_ns, w_ns))} |")
    return md + [""]


def _kernels_section(cgs: list[CostGroup], releases: list[str], out: Path,
                     pngs: list[Path]) -> list[str]:
    from . import plots
    md = ["## Across kernels", "", "| kind/backing | " + " | ".join(releases) + " |",
          "| --- |" + " ---: |" * len(releases)]
    vals: dict[tuple[str, str], float] = {}
    names = sorted({f"{g.kind}/{g.backing}" for g in cgs})
    for g in cgs:
        npe = sorted(y / x for x, y in zip(g.xs, g.ys))
        vals[(f"{g.kind}/{g.backing}", g.release)] = npe[len(npe) // 2]
    for nme in names:
        md.append(f"| {nme} | " + " | ".join(
            f"{vals[(nme, r)]:.1f}" if (nme, r) in vals else "-" for r in releases) + " |")
    p = plots.kernel_bars(out / "kernels_ns_per_entry.png", "walk ns/entry p50 by kernel",
                          names, releases, vals, "ns per entry (p50)")
    pngs.append(p)
    return md + ["", f"![kernels]({p.name})", ""]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="ptwalk-report",
                                description="Markdown + PNG report of ptwalk results")
    p.add_argument("inputs", nargs="+", metavar="RESULT_DIR_OR_FILES")
    p.add_argument("--out", metavar="DIR", help="output directory (default: the first "
                   "input if it is a directory, else ./ptwalk-report)")
    p.add_argument("--upstream", action="store_true",
                   help="print a 72-column plain-text report of one result for a mailing list")
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
