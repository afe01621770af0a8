"""The stall-walk-held budget: the walk's part of an attributed mmap_lock
wait (walker_held_ns, results/SCHEMA.md; less the time the walker spent
off CPU while holding, and less the time the waiter was runnable but not on
a CPU while the walker held, when sched events saw them) judged against the budget
of ONE hold of the kind's lock unit: max_ns_per_entry x the entries under
one hold + slack_ns. The entries under one hold are the walk's entries x
stall_estimate.kinds.KIND.measured_hold_bytes / size_bytes (the result's
own figures, from the C++ table of lock units: the whole mapping for
clear_refs, one 2 MiB range for pagemap, the largest VMA for smaps_rollup
and PAGEMAP_SCAN, the VMAs of one read() for smaps).

A lock unit that lets a writer in between holds (every unit but
whole_walk) does not bound the writer's wait by one hold: the walker drops
mmap_lock for read and takes it again at once, and rwsem lets a reader
steal the lock ahead of a queued writer until that writer has waited
RWSEM_WAIT_TIMEOUT (DIV_ROUND_UP(HZ, 250) jiffies: 4 ms at HZ=250) and set
the handoff bit ("locking/rwsem: Enable reader optimistic lock stealing",
1a728dff855a, v5.11; kernel/locking/rwsem.c, rwsem_down_read_slowpath()).
Measured: a writer behind pagemap on 128 MiB waited with the walker
holding 3.1 ms of its wait, where one 2 MiB hold is ~15 us. So for those
units the bound is max(one hold's budget, handoff_ns) + slack_ns, with
handoff_ns the budget's allowance for the handoff (a few jiffies: the
timeout is checked when the writer runs). It is checked only when the
writer runs: on a busy host that keeps a woken writer off the CPUs, the
walker goes on taking the lock back for as long (measured: 27.3 ms of a
32.5 ms wait beside two busy loops). That time, waiter_runnable_ns, is the
host's, not the walk's, and is not counted either.

Unlike stall-within-walk, whose bound grows with the walk (a walk twice as
slow is allowed a stall twice as long), this bound is fixed per entry: a
kernel whose walks hold the lock twice as long per entry fails it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import results as res
from . import split
from .walk_kinds import LockUnit

KEY_DOC = "kind/backing, kind, */backing, *"


@dataclass
class Held:
    """The worst walk-held part of one walk's stalls, and its hold's size."""
    held_ns: float        # walker-held, less off CPU and runnable when known (no split: the wait)
    off_cpu_ns: float | None
    runnable_ns: float | None
    split: bool
    wait_ns: float
    entries: float        # entries under one hold
    unit: LockUnit
    walk: res.Walk
    run: res.Result


def hold_entries(r: res.Result, w: res.Walk) -> tuple[float, LockUnit] | None:
    """Entries under one hold of the walk's lock unit, and the unit; None
    when the result does not say how its kind holds the lock."""
    est = r.stall_estimate
    k = est.kinds.get(w.kind) if est is not None else None
    size = r.scenario.size_bytes
    if k is None or not size:
        return None
    hb = k.measured_hold_bytes
    if hb is None or hb <= 0:
        return None
    return float(w.ptes or 0) * min(1.0, float(hb) / float(size)), k.lock_unit


def worst_per_walk(r: res.Result) -> list[Held]:
    """Per walk with attributed stalls: its stall with the largest on-CPU
    walker-held part; for a stall without the split (older results, a view
    that could not split it), the whole wait, as stall-within-walk does."""
    ss = split.stalls(r)
    if not ss:
        return []
    best: dict[int, Held] = {}
    for s in ss:
        w = r.walk_of(s)
        if w is None:
            continue
        he = hold_entries(r, w)
        if he is None:
            continue
        has = s.split
        off = s.walker_off_cpu_ns if has else None
        off_f = float(off) if off is not None else None
        run = s.waiter_runnable_ns if has else None
        run_f = float(run) if run is not None else None
        held = (float(s.walker_held_ns or 0) - (off_f or 0.0) - (run_f or 0.0)
                if has else float(s.wait_ns))
        if w.index not in best or held > best[w.index].held_ns:
            best[w.index] = Held(held_ns=held, off_cpu_ns=off_f, runnable_ns=run_f, split=has,
                                 wait_ns=float(s.wait_ns), entries=he[0], unit=he[1], walk=w,
                                 run=r)
    return list(best.values())


def check(b: dict, key: str, runs: list[res.Result], verdict: Any) -> list[Any]:
    """Per walk kind of the scenario: the worst excess of a walk-held part
    over max_ns_per_entry x entries under one hold + slack_ns (handoff_ns
    instead of one hold where the unit lets writers in and it is larger).
    A stall without the split is judged on its whole wait, and the verdict
    says so; no lock unit in the results, or no stall list: one SKIP saying
    why (never a guess)."""
    from .budgets import FAIL, PASS, SKIP, _limit
    from .compare import fmt_ns
    by_kind: dict[str, list[Held]] = {}
    for r in runs:
        for h in worst_per_walk(r):
            by_kind.setdefault(h.walk.kind.value, []).append(h)
    backing = runs[0].scenario.backing.value
    slack, handoff = float(b.get("slack_ns", 0)), float(b.get("handoff_ns", 0))
    out = []
    for kind, hs in sorted(by_kind.items()):
        unsplit = sum(1 for h in hs if not h.split)
        lim = _limit(b["max_ns_per_entry"], kind, backing)
        if lim is None:
            continue
        limit = float(lim)

        def allowed_for(h: Held) -> float:
            one = limit * h.entries
            return (one if h.unit == LockUnit.whole_walk else max(one, handoff)) + slack

        def excess(h: Held) -> float:
            return h.held_ns - allowed_for(h)
        worst = max(hs, key=excess)
        allowed = allowed_for(worst)
        by_handoff = worst.unit != LockUnit.whole_walk and handoff > limit * worst.entries
        off = (f", walker off CPU {fmt_ns(worst.off_cpu_ns)} of its hold not counted"
               if worst.off_cpu_ns else "")
        if worst.runnable_ns:
            off += (f", waiter runnable but not on a CPU for {fmt_ns(worst.runnable_ns)} "
                    "of it not counted")
        out.append(verdict(
            f"{b['id']}[{kind}]", key, PASS if excess(worst) <= 0 else FAIL,
            f"worst walk-held part {fmt_ns(worst.held_ns)} of a {fmt_ns(worst.wait_ns)} wait"
            f"{off}; one {worst.unit.value} hold covers {worst.entries:,.0f} entries "
            f"({worst.held_ns / max(worst.entries, 1):.1f} ns/entry; {len(hs)} walks)",
            (f"<= rwsem handoff allowance {fmt_ns(handoff)} (one hold: {limit:g} ns/entry x "
             f"{worst.entries:,.0f}) + {fmt_ns(slack)} = {fmt_ns(allowed)}" if by_handoff else
             f"<= {limit:g} ns/entry x entries under one hold + {fmt_ns(slack)} "
             f"= {fmt_ns(allowed)}"),
            f"{worst.run.path.name} iteration {worst.walk.iteration}"
            + (f"; {split.UNAVAILABLE} for {unsplit} of {len(hs)} walks: the whole wait judged"
               if unsplit else "")))
    if not out and all(split.stalls(r) == () for r in runs):
        out.append(verdict(b["id"], key, PASS, f"no attributed stall in {len(runs)} runs",
                           f"<= ns/entry x entries under one hold ({KEY_DOC})"))
    elif not out:
        backends = sorted({r.backend.value for r in runs})
        listed = any(split.stalls(r) is not None for r in runs)
        out.append(verdict(b["id"], key, SKIP, "no stall with a known lock unit",
                           f"<= ns/entry x entries under one hold ({KEY_DOC})",
                           "the results do not say how the kind holds mmap_lock "
                           "(stall_estimate.kinds.KIND.lock_unit)" if listed else
                           f"backend {', '.join(backends)} does not attribute stalls"))
    return out
