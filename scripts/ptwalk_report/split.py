"""The split of an attributed mmap_lock wait (results/SCHEMA.md,
kernel_view.stalls): `walker_held_ns` (the walker held the lock in a mode
that excluded the waiter), `others_held_ns` (other tasks did), `free_ns`
(neither: the waiter was waking, runnable or spinning). The three sum to
`wait_ns`. Results without it (older results, the syscall backend, views
that could not split) give None here, never a guess."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from . import results as res

UNAVAILABLE = "split unavailable"


def has_split(s: res.Stall) -> bool:
    return s.split


def stalls(r: res.Result) -> tuple[res.Stall, ...] | None:
    """The run's attributed stalls, or None when its backend lists none."""
    kv = r.kernel_view
    return kv.stalls if kv is not None else None


def _complete_above(r: res.Result) -> float:
    kv = r.kernel_view
    return float(kv.stalls_complete_above_ns or 0) if kv is not None else 0.0


def walk_held(r: res.Result, w: res.Walk) -> float | None:
    """The walker-held part of the walk's attributed stalls: the walk's own
    `max_stall_walker_held_ns`, else the largest `walker_held_ns` of its
    stalls in kernel_view.stalls. When the list misses some of the walk's
    stalls (it is complete only above `stalls_complete_above_ns`), the
    missing ones held less than that threshold, which then bounds the
    figure from above. None when the split is unavailable."""
    if w.max_stall_walker_held_ns is not None:
        return float(w.max_stall_walker_held_ns)
    ss = stalls(r)
    if ss is None:
        return None
    mine = [s for s in ss if s.walk == w.index]
    held = [s.walker_held_ns for s in mine if s.split]
    if not mine or len(held) != len(mine):
        return None
    v = float(max(h for h in held if h is not None))
    if (w.stalls if w.stalls is not None else len(mine)) > len(mine):
        v = max(v, _complete_above(r))
    return v


@dataclass
class Worst:
    """One attributed stall and its split."""
    wait: float
    held: float
    others: float
    free: float
    off_cpu: float | None
    kind: str
    run: str
    runnable: float | None = None

    def text(self) -> str:
        from .compare import fmt_ns
        off = (f", the walker off CPU for {fmt_ns(self.off_cpu)} of its hold"
               if self.off_cpu else "")
        if self.runnable:
            off += (f", the waiter runnable but not on a CPU for {fmt_ns(self.runnable)} "
                    "of it")
        return (f"{fmt_ns(self.wait)} = walk held {fmt_ns(self.held)} "
                f"({100 * self.held / self.wait if self.wait else 0:.0f}%) + other holders "
                f"{fmt_ns(self.others)} + free {fmt_ns(self.free)}{off}")


def worst_split(runs: Iterable[res.Result], kind: str | None = None,
                n: int = 1) -> list[Worst]:
    """The n longest split stalls of the runs (of one walk kind if given)."""
    out: list[Worst] = []
    for r in runs:
        for s in stalls(r) or ():
            if (s.walker_held_ns is None or s.others_held_ns is None
                    or s.free_ns is None):
                continue
            w = r.walk_of(s)
            k = w.kind.value if w is not None else "?"
            if kind is not None and k != kind:
                continue
            off, run = s.walker_off_cpu_ns, s.waiter_runnable_ns
            out.append(Worst(float(s.wait_ns), float(s.walker_held_ns),
                             float(s.others_held_ns), float(s.free_ns),
                             float(off) if off is not None else None, k, r.path.name,
                             float(run) if run is not None else None))
    out.sort(key=lambda x: -x.wait)
    return out[:n]


@dataclass
class Share:
    """The walk's share of a victim's latency quantile during walks."""
    value: float       # ns: the k-th largest walker-held part (0 with fewer stalls)
    k: int
    stalls: int        # the victim's listed stalls
    bound: bool        # value is an upper bound (the list was incomplete below it)


def victim_share(runs: list[res.Result], victim: res.VictimName, q: float,
                 n_ops: int) -> Share | None:
    """A victim's latency quantile q during walks has n_ops operations; the
    walk's share of it is the k-th largest walker-held part among that
    victim's stalls (k = the operations at or above the nearest-rank
    quantile, as hist.quantile ranks them), 0 with fewer stalls: an
    operation without an attributed wait owes the walk nothing. None when a
    run has no stall list or one stall without the split, or when no run
    lists any stall (nothing shows that the view splits: older results)."""
    held: list[float] = []
    threshold, incomplete, seen = 0.0, False, False
    for r in runs:
        ss = stalls(r)
        if ss is None or not all(s.split for s in ss):
            return None
        seen |= bool(ss)
        held += [float(s.walker_held_ns) for s in ss
                 if s.victim == victim and s.walker_held_ns is not None]
        threshold = max(threshold, _complete_above(r))
        kv = r.kernel_view
        total = kv.stalls_total if kv is not None else None
        incomplete |= (total if total is not None else len(ss)) > len(ss)
    if n_ops <= 0 or not seen:
        return None
    k = 1 if q >= 1.0 else n_ops - max(1, math.ceil(q * n_ops)) + 1
    held.sort(reverse=True)
    v = held[k - 1] if len(held) >= k else 0.0
    bound = incomplete and v < threshold
    return Share(max(v, threshold) if bound else v, k, len(held), bound)
