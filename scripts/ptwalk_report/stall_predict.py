"""The report's predicted worst stall of a walk kind at a size it did not
measure, in the unit the kind holds mmap_lock by (the result's
stall_estimate.kinds.KIND.lock_unit, from the C++ table of lock units):
split out of report.py, which renders it."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import split
from .compare import fmt_ns
from .walk_kinds import LockUnit

if TYPE_CHECKING:
    from . import fit as fitmod
    from .report import CostGroup, RunPoint

GIB = 1 << 30
MIB = 1 << 20


def _pi(f: fitmod.Fit | None, x: float) -> str:
    if f is None:
        return "n/a"
    y, lo, hi = f.interval(x)
    if lo != lo:  # nan
        return f"{fmt_ns(y)} (no PI: too few runs)"
    return f"{fmt_ns(y)} [{fmt_ns(max(lo, 0.0))}, {fmt_ns(hi)}]"


def _size(b: float) -> str:
    return f"{b / GIB:.3g} GiB" if b >= GIB else f"{b / MIB:.3g} MiB"


_BYTES = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50}


def _est_max(p: RunPoint) -> float | None:
    """The run's stall_estimate for its layout: estimate_max_ns, or the top
    of estimate_max_range_ns (aliased runs whose calibration disagreed)."""
    e = p.estimate
    if e is None:
        return None
    if e.estimate_max_ns is not None:
        return float(e.estimate_max_ns)
    rg = e.estimate_max_range_ns
    return rg[1] if rg is not None else None


def _vma_bytes(layout: tuple[str, int, int]) -> float | None:
    """The largest VMA of the layout at any mapping size: None for one VMA
    per mapping (it grows with the mapping), the size of "VMAs of SIZE",
    else (the measured layout) the largest VMA the run recorded."""
    text, _, largest = layout
    if text == "one VMA per mapping":
        return None
    m = re.fullmatch(r"VMAs of ([\d.]+) (B|[KMGTP]iB)", text)
    return float(m.group(1)) * _BYTES[m.group(2)] if m else float(largest)


@dataclass
class StallPrediction:
    text: str                # the figure with how it was made, or why there is none
    value: float | None      # ns


def predict_stall(g: CostGroup, x: float) -> StallPrediction:
    """Worst stall of a walk of this kind at x entries, extrapolated in the
    unit the kind holds mmap_lock by (CostGroup.lock_unit): whole_walk:
    linear in entries (the fit of each run's worst walker-held part, the
    whole wait when the split is unavailable); pmd_chunk: flat, the longest
    hold of one 2 MiB range measured (walker-held stalls) or modelled
    (stall_estimate); per-VMA units (vma_when_contended, vma_per_call,
    read_chunk): the walk of the layout's largest hold (stall_estimate):
    the whole walk for one VMA per mapping, else flat once the runs
    measured a hold that large. vma_lock (per-VMA locks, no mmap_lock
    hold over the walk) and no unit: no prediction."""
    unit = g.lock_unit
    if unit is None:
        return StallPrediction("lock unit unknown (the results carry no stall_estimate."
                               "kinds.KIND.lock_unit): the stall is not extrapolated", None)
    if unit == LockUnit.vma_lock:
        return StallPrediction("none on mmap_lock: on this kernel the walk holds per-VMA "
                               "locks, not mmap_lock (stall_estimate.kinds.KIND.locking); "
                               "a writer to the walked VMA waits, which is not extrapolated",
                               None)
    if unit == LockUnit.whole_walk:
        f = g.held_fit if g.split else g.stall_fit
        if f is None:
            return StallPrediction("n/a (no stall attribution)" if g.stall_fit is None and
                                   not g.split else "not extrapolated", None)
        if not f.extrapolates:
            return StallPrediction("not extrapolated", None)
        what = "walk held" if g.split else f"whole wait, {split.UNAVAILABLE}"
        return StallPrediction(f"{_pi(f, x)} ({what}; linear in entries)", f.predict(x))
    ests = [e for p in g.runs if (e := _est_max(p)) is not None]
    if unit == LockUnit.pmd_chunk:
        held = [p.worst_held for p in g.runs if p.worst_held is not None]
        if not held and not ests:
            return StallPrediction("n/a (no hold of a 2 MiB range measured)", None)
        v = max(held + ests)
        parts = ([f"walk-held stalls up to {fmt_ns(max(held))}"] if held else []) + \
            ([f"model {fmt_ns(max(ests))}"] if ests else [])
        return StallPrediction(f"{fmt_ns(v)} flat (one 2 MiB range per hold: "
                               f"{', '.join(parts)})", v)
    layouts = {p.layout for p in g.runs if p.layout is not None}
    if len({lay[0] for lay in layouts}) != 1:
        return StallPrediction("not extrapolated: the runs name different VMA layouts", None)
    lay = max(layouts, key=lambda t: t[2])
    vma = _vma_bytes(lay)
    target_bytes = max(0.0, (x - g.entries_base) / g.entries_per_byte) \
        if g.entries_per_byte > 0 else math.inf
    if vma is not None and unit == LockUnit.read_chunk:
        vpr = max(int(p.estimate.vmas_per_read or 1) if p.estimate is not None else 1
                  for p in g.runs)
        vma *= max(1, vpr)
    if vma is None or vma >= target_bytes:
        if g.fit is None or not g.extrapolates:
            return StallPrediction("not extrapolated", None)
        return StallPrediction(f"{_pi(g.fit, x)} (the walk of one VMA holding the whole "
                               f"mapping: {lay[0]}; linear in entries)", g.fit.predict(x))
    measured = max(float(p.estimate.layout_hold_bytes or 0) if p.estimate is not None else 0.0
                   for p in g.runs)
    if vma <= measured and ests:
        v = max(ests)
        return StallPrediction(f"{fmt_ns(v)} flat (the largest hold of {lay[0]}: "
                               f"{_size(vma)}, stall_estimate)", v)
    hx = g.entries_at(vma)
    if g.fit is None or (hx > max(p.entries for p in g.runs) and not g.extrapolates):
        return StallPrediction("not extrapolated", None)
    return StallPrediction(f"{_pi(g.fit, hx)} flat (the walk of the largest hold of "
                           f"{lay[0]}: {_size(vma)}, {hx:,.0f} entries)", g.fit.predict(hx))


def measured_stall(g: CostGroup) -> str:
    """The largest stall the runs measured: the walk's part and the whole wait."""
    st = [p.worst_stall for p in g.runs if p.worst_stall is not None]
    if not st:
        return "-"
    if g.split:
        return (f"walk held {fmt_ns(max(p.worst_held for p in g.runs if p.worst_held is not None))}"
                f" / whole wait {fmt_ns(max(st))}")
    return f"whole wait {fmt_ns(max(st))} ({split.UNAVAILABLE})"
