"""PNG plots (matplotlib, Agg backend). Each function writes one file and
returns its path; the Markdown report carries the same figures as tables."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

os.environ.setdefault("MPLCONFIGDIR", "/tmp/ptwalk-mplconfig")
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

from . import hist  # noqa: E402
from .fit import Fit  # noqa: E402
from .result_types import Stall, Walk  # noqa: E402


@dataclass
class CostSeries:
    label: str
    walk_xs: list[float]          # every walk: entries
    walk_ys: list[float]          # every walk: duration ns
    run_xs: list[float]           # one point per run: median entries
    run_ys: list[float]           # one point per run: median duration ns
    run_stalls: list[tuple[float, float]]   # (entries, worst stall ns) per run
    fit: Fit | None
    stall_fit: Fit | None
    aliased: list[tuple[float, float, float | None]] = field(default_factory=list)
    # aliased runs of the same kind (entries, duration, worst stall): drawn as
    # crosses beside the distinct-page fit, not part of it


def _fit_curve(ax, f: Fit, color: str, targets: Sequence[float], label: str) -> None:
    """The fit over the measured range (solid); beyond it, when the fit may
    extrapolate, dashed up to the largest target with its 95% prediction
    interval dotted (drawn where the figure is used; within the measured range
    the points speak for themselves)."""
    def pts(lo: float, hi: float) -> list[float]:
        return [lo * (hi / lo) ** (k / 60) for k in range(61)]

    def ms(y: float) -> float:   # a negative prediction has no place on log axes
        return y / 1e6 if y > 0 else math.nan
    gx = pts(f.x_min, f.x_max)
    ax.plot(gx, [ms(f.predict(x)) for x in gx], color=color, lw=1.6, label=label)
    if f.extrapolates and targets and f.n >= 3:
        ex = pts(f.x_max, max(targets))
        ax.plot(ex, [ms(f.predict(x)) for x in ex], color=color, lw=1.2, ls="--")
        # the 95% prediction interval as two thin lines (a lower bound <= 0 is not drawn)
        band = [f.interval(x) for x in ex]
        ax.plot(ex, [ms(hi) for _, _, hi in band], color=color, lw=0.8, ls=":")
        ax.plot(ex, [ms(lo) for _, lo, _ in band], color=color, lw=0.8, ls=":")


def walk_cost(path: Path, title: str, series: Sequence[CostSeries],
              targets: Sequence[float] = ()) -> Path:
    """Duration and worst stall against entries on log-log axes: every walk
    (faint), every run (median, solid), the least-squares fit with R² and,
    when it may extrapolate, its 95% prediction interval up to the targets. The
    PNG carries the x range of the plotted run points (text chunk
    ptwalk-x-range) so that tests can check the sweep it shows."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 6.6))
    run_x: list[float] = []
    low = {ax1: math.inf, ax2: math.inf}   # smallest point drawn: the y axis starts below it
    for i, sr in enumerate(series):
        color = f"C{i % 10}"
        ax1.scatter(sr.walk_xs, [max(y, 1.0) / 1e6 for y in sr.walk_ys], s=5, alpha=0.15,
                    color=color, lw=0)
        ax1.scatter(sr.run_xs, [max(y, 1.0) / 1e6 for y in sr.run_ys], s=22, color=color,
                    edgecolors="k", linewidths=0.4, label=f"{sr.label}: runs")
        run_x += sr.run_xs
        low[ax1] = min([low[ax1]] + [y / 1e6 for y in sr.walk_ys + sr.run_ys if y > 0])
        st = [(x, y) for x, y in sr.run_stalls if y > 0]
        low[ax2] = min([low[ax2]] + [y / 1e6 for _, y in st])
        if sr.aliased:
            ax1.scatter([a[0] for a in sr.aliased], [a[1] / 1e6 for a in sr.aliased], s=40,
                        marker="x", color=color, label=f"{sr.label}: ALIASED runs")
            al = [(a[0], a[2]) for a in sr.aliased if a[2]]
            if al:
                ax2.scatter([x for x, _ in al], [y / 1e6 for _, y in al], s=40, marker="x",
                            color=color, label=f"{sr.label}: ALIASED runs")
        if st:
            ax2.scatter([x for x, _ in st], [y / 1e6 for _, y in st], s=22, color=color,
                        edgecolors="k", linewidths=0.4, label=f"{sr.label}: runs")
        for ax, f in ((ax1, sr.fit), (ax2, sr.stall_fit)):
            if f is not None:
                _fit_curve(ax, f, color, targets,
                           f"{sr.label} fit: {f.a / 1e3:.3g} us + {f.b:.3g} ns/entry, "
                           f"R² {f.r2:.2f}"
                           + ("" if f.extrapolates else " (not extrapolated)"))
    for ax in (ax1, ax2):
        ax.set_xscale("log")
        ax.set_yscale("log")
        if low[ax] < math.inf:
            ax.set_ylim(bottom=low[ax] / 3)
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        for t in targets:
            ax.axvline(t, color="grey", lw=0.8, alpha=0.6)
        ax.set_xlabel("leaf entries walked (4 KiB PTEs + PMD leaves)")
        ax.grid(True, which="major", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6.3, loc="upper left", bbox_to_anchor=(-0.02, -0.12), ncol=2,
                      frameon=False, columnspacing=0.8, handletextpad=0.3)
    ax1.set_ylabel("walk duration (ms)")
    ax1.set_title("duration: walks (faint), run medians, fit (dotted: 95% PI)")
    ax2.set_ylabel("worst attributed mmap_lock wait (ms; the walk's part when split)")
    ax2.set_title("worst stall per run, fit of whole-walk holds (dotted: 95% PI)")
    fig.suptitle(title + ("  (grey lines: " + ", ".join(f"{t:,.0f}" for t in targets)
                          + " entries)" if targets else ""))
    fig.subplots_adjust(left=0.06, right=0.98, bottom=0.3, top=0.9, wspace=0.2)
    meta = {"ptwalk-x-range": f"{min(run_x):.0f} {max(run_x):.0f}" if run_x else "",
            "ptwalk-runs": str(len(run_x))}
    fig.savefig(path, dpi=90, metadata=meta)
    plt.close(fig)
    return path


def victim_cdfs(path: Path, title: str,
                victims: Sequence[tuple[str, hist.Buckets, hist.Buckets]]) -> Path:
    n = max(1, len(victims))
    fig, axes = plt.subplots(1, n, figsize=(4.6 * n, 4.2), squeeze=False)
    for ax, (name, outside, during) in zip(axes[0], victims):
        for label, h, color in (("outside walks", outside, "C0"), ("during walks", during, "C3")):
            if hist.total(h) == 0:
                continue
            xs, ys = hist.cdf_points(h)
            tail = [max(1.0 - y, 1e-7) for y in ys]
            ax.step([x / 1e3 for x in xs], tail, where="post", color=color,
                    label=f"{label} (n={hist.total(h):,})")
        ax.set_xscale("log")
        ax.set_yscale("log")
        # log axes with tight_layout are slow (minor tick labels); keep majors only
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_ylim(1e-6, 1.1)
        for q in (1e-2, 1e-3, 1e-4):
            ax.axhline(q, color="grey", lw=0.5, ls=":")
        ax.set_xlabel("latency (us)")
        ax.set_ylabel("share of ops slower (1 - CDF)")
        ax.set_title(f"victim {name}")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title + "  (dotted: p99, p99.9, p99.99)")
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.13, top=0.85, wspace=0.3)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def timeline(path: Path, title: str, t0: int, walks: Sequence[Walk],
             stalls: Sequence[Stall]) -> Path:
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(12, 5), sharex=True,
                                   gridspec_kw={"height_ratios": [1, 2]})
    kinds = sorted({w.kind.value for w in walks})
    for i, k in enumerate(kinds):
        bars = [((w.start_ns - t0) / 1e9, w.duration_ns / 1e9)
                for w in walks if w.kind.value == k]
        ax1.broken_barh(bars, (i - 0.4, 0.8), color=f"C{i}")
    ax1.set_yticks(range(len(kinds)), kinds)
    ax1.set_title("walks (bar = walk duration)")
    waiters = sorted({s.waiter for s in stalls})
    for i, v in enumerate(waiters):
        pts = [s for s in stalls if s.waiter == v]
        ax2.scatter([(s.start_ns - t0) / 1e9 for s in pts], [s.wait_ns / 1e6 for s in pts],
                    s=14, color=f"C{i + 3}", label=f"{v} wait")
    ax2.plot([(w.start_ns - t0) / 1e9 for w in walks], [w.duration_ns / 1e6 for w in walks],
             "k_", ms=8, label="walk duration")
    ax2.set_ylabel("ms")
    ax2.set_xlabel("seconds since scanner start")
    ax2.set_title("mmap_lock waits attributed to walks" if stalls else
                  "walk durations (no stall attribution with this backend)")
    ax2.grid(True, alpha=0.3)
    ax2.legend(fontsize=8)
    fig.suptitle(title)
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.1, top=0.88, hspace=0.3)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def kernel_bars(path: Path, title: str, groups: Sequence[str], releases: Sequence[str],
                values: dict[tuple[str, str], float], ylabel: str) -> Path:
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(groups) * max(1, len(releases)) / 2), 4.5))
    width = 0.8 / max(1, len(releases))
    for j, rel in enumerate(releases):
        xs = [i + j * width for i in range(len(groups))]
        ax.bar(xs, [values.get((g, rel), 0.0) for g in groups], width, label=rel)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(groups))], groups, rotation=30,
                  ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.3, top=0.9)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
