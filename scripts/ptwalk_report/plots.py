"""PNG plots (matplotlib, Agg backend). Each function writes one file and
returns its path; the Markdown report carries the same figures as tables."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

os.environ.setdefault("MPLCONFIGDIR", "/tmp/ptwalk-mplconfig")
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

from . import hist  # noqa: E402
from .fit import Fit  # noqa: E402

Series = tuple[str, list[float], list[float], Fit | None]  # label, entries, duration ns, fit


def walk_cost(path: Path, title: str, series: Sequence[Series]) -> Path:
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8))
    for i, (label, xs, ys, f) in enumerate(series):
        color = f"C{i % 10}"
        ax1.scatter(xs, [y / 1e6 for y in ys], s=10, alpha=0.5, color=color, label=label)
        ax2.scatter(xs, [y / x for x, y in zip(xs, ys)], s=10, alpha=0.5, color=color, label=label)
        if f is not None:
            lo, hi = min(xs), max(xs)
            gx = [lo + (hi - lo) * k / 50 for k in range(51)] if hi > lo else [lo * 0.8, lo * 1.2]
            ax1.plot(gx, [f.predict(x) / 1e6 for x in gx], color=color, lw=1.5,
                     label=f"fit: {f.a / 1e6:.3g} ms + {f.b:.3g} ns x entries ({f.model})")
            ax2.plot(gx, [f.predict(x) / x for x in gx], color=color, lw=1.5)
    ax1.set_xlabel("leaf entries walked (4 KiB PTEs + PMD leaves)")
    ax1.set_ylabel("walk duration (ms)")
    ax1.set_title("duration vs entries, least-squares fit")
    ax2.set_xlabel("leaf entries walked")
    ax2.set_ylabel("ns per entry")
    ax2.set_title("ns per entry (fit: a/entries + b)")
    for ax in (ax1, ax2):
        ax.grid(True, alpha=0.3)
        ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 0))
    ax1.legend(fontsize=7, loc="upper left")
    fig.suptitle(title)
    fig.subplots_adjust(left=0.06, right=0.98, bottom=0.12, top=0.86, wspace=0.22)
    fig.savefig(path, dpi=90)
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


def timeline(path: Path, title: str, t0: int, walks: Sequence[dict],
             stalls: Sequence[dict]) -> Path:
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(12, 5), sharex=True,
                                   gridspec_kw={"height_ratios": [1, 2]})
    kinds = sorted({w["kind"] for w in walks})
    for i, k in enumerate(kinds):
        bars = [((w["start_ns"] - t0) / 1e9, w["duration_ns"] / 1e9) for w in walks if w["kind"] == k]
        ax1.broken_barh(bars, (i - 0.4, 0.8), color=f"C{i}")
    ax1.set_yticks(range(len(kinds)), kinds)
    ax1.set_title("walks (bar = walk duration)")
    victims = sorted({s.get("victim", "?") for s in stalls})
    for i, v in enumerate(victims):
        pts = [s for s in stalls if s.get("victim", "?") == v]
        ax2.scatter([(s["start_ns"] - t0) / 1e9 for s in pts], [s["wait_ns"] / 1e6 for s in pts],
                    s=14, color=f"C{i + 3}", label=f"{v} wait")
    ax2.plot([(w["start_ns"] - t0) / 1e9 for w in walks], [w["duration_ns"] / 1e6 for w in walks],
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
