# SPDX-License-Identifier: GPL-2.0
"""Which walk stalls which operation, per kernel: the cells of the stall
table (scripts/ptwalk-stall-table) from one result per walk kind and
kernel (`ptwalk run` with the victims read, fault, mmap and vma).

A cell is one walk kind x victim x kernel:
- walk_held_ns: the longest part of one of the victim's waits that the
  walk kept from it: the split's walker_held_ns, plus the part queued
  behind a writer that waited for the walk's VMA read lock (vma_chain_ns),
  and a VMA writer's own wait for the walker (kernel_view.vma_locks); the
  backend that split it is the cell's view (module or tracepoint);
- stalls: that part is 1 ms or more (the validation's threshold);
- estimate_ns: for a walk of 25M PTEs in one VMA (the incident), the
  measured part x 25M / the run's PTEs where the kind's lock unit grows
  with its VMA (ptwalk locking: whole_walk, read_chunk, vma_when_contended,
  vma_per_call, vma_lock); where it does not (pmd_chunk: pagemap's 2 MiB),
  the measured part;
- the kind's lock on that kernel and the release that changed it.
A run whose stalls the victims' own clocks contradict (its validation
disagrees) gives no figure: the cell says so.
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import ptwalk_abi  # noqa: E402

# the kinds of ptwalk.ko's contract (module/ptwalk_abi.h PTW_KINDS)
KINDS = ptwalk_abi.contract().kinds
VICTIMS = ("read", "fault", "mmap", "vma")
INCIDENT_PTES = 25_000_000
STALL_NS = 1_000_000
# lock units whose hold grows with the walked VMA: a 25M-PTE VMA scales it
SCALES = {"whole_walk", "read_chunk", "vma_when_contended", "vma_per_call", "vma_lock"}


@dataclass
class Cell:
    kind: str
    victim: str
    kernel: str
    release: str = ""
    view: str = ""                      # module | tracepoint | "" (no run)
    walk_held_ns: int | None = None     # None: no run, or no stall view
    stalls: bool | None = None
    estimate_ns: int | None = None
    lock: str = ""                      # "write, whole_walk" / "none, vma_lock"
    changed: str = ""                   # "7.2 (was read_chunk up to 7.1)"
    note: str = ""                      # why there is no figure


def walk_held(doc: dict[str, Any], victim: str) -> int:
    """The longest walk-kept part of one of victim's waits in a result."""
    kv = doc.get("kernel_view") or {}
    best = 0
    for s in kv.get("stalls") or []:
        if s.get("victim") == victim:
            best = max(best, int(s.get("walker_held_ns") or 0) + int(s.get("vma_chain_ns") or 0))
    vl = kv.get("vma_locks") or {}
    for w in vl.get("waits") or []:
        if w.get("victim") == victim:
            best = max(best, int(w["walker_held_ns"]))
    return best


def lock_of(locking: dict[str, Any], kind: str) -> tuple[str, str, str]:
    """(lock text, unit, change text) of kind in `ptwalk locking --json`."""
    k = (locking.get("kinds") or {}).get(kind) or {}
    unit = str(k.get("lock_unit", ""))
    text = f"{k.get('lock_mode', '?')}, {unit}" if k else ""
    ch = k.get("changed")
    changed = ""
    if ch:
        changed = f"{ch['since']} (up to {ch['before']}: the earlier lock)"
    return text, unit, changed


def cells(kernel: str, results: dict[str, dict[str, Any] | None],
          locking: dict[str, Any], skipped: dict[str, str] | None = None) -> list[Cell]:
    """The cells of one kernel: results by kind (None: the kind did not
    run there), its locking table, and why a kind was skipped."""
    out: list[Cell] = []
    for kind in KINDS:
        doc = results.get(kind)
        lock, unit, changed = lock_of(locking, kind)
        for victim in VICTIMS:
            c = Cell(kind, victim, kernel, lock=lock, changed=changed)
            if doc is None:
                c.note = (skipped or {}).get(kind, "no run")
                out.append(c)
                continue
            c.release = str((doc.get("kernel") or {}).get("release", ""))
            kv = doc.get("kernel_view") or {}
            if "stalls" not in kv:
                c.note = f"no stall view with the {doc.get('backend')} backend"
                out.append(c)
                continue
            # a figure the victims' own clocks contradict is no figure
            val = ((doc.get("validation") or {}).get("stalls") or {})
            if val.get("agree") is not True:
                c.view = str(doc.get("backend", ""))
                c.note = (f"{c.view} view DISAGREES with the victims' clocks: "
                          + "; ".join(val.get("disagreements") or ["no validation"]))
                out.append(c)
                continue
            c.view = str(doc.get("backend", ""))
            c.walk_held_ns = walk_held(doc, victim)
            c.stalls = c.walk_held_ns >= STALL_NS
            ptes = int(((doc.get("workload") or {}).get("size_start") or {}).get("entries") or 0)
            if c.stalls and ptes:
                scale = INCIDENT_PTES / ptes if unit in SCALES else 1.0
                c.estimate_ns = int(c.walk_held_ns * scale)
            out.append(c)
    return out


def fmt_ns(ns: int) -> str:
    if ns >= 1_000_000_000:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1_000_000:
        return f"{ns / 1e6:.1f} ms"
    return f"{ns / 1e3:.0f} us"


def cell_text(c: Cell) -> str:
    if c.walk_held_ns is None:
        return f"- ({c.note})"
    if not c.stalls:
        return f"no ({fmt_ns(c.walk_held_ns)})"
    est = f"; 25M PTEs: {fmt_ns(c.estimate_ns)}" if c.estimate_ns is not None else ""
    return f"**{fmt_ns(c.walk_held_ns)}**{est}"


def render(all_cells: list[Cell], kernels: list[str], clock: str) -> str:
    """The table: a row per kind x victim, a column per kernel."""
    by = {(c.kind, c.victim, c.kernel): c for c in all_cells}
    head = ["| walk | victim | " + " | ".join(kernels) + " |",
            "|---|---|" + "---|" * len(kernels)]
    rows = []
    for kind in KINDS:
        lock = [by[(kind, VICTIMS[0], k)] for k in kernels if (kind, VICTIMS[0], k) in by]
        rows.append(f"| {kind} | (lock) | " + " | ".join(
            (c.lock or "-") + (f"; changed in {c.changed}" if c.changed else "") for c in lock)
            + " |")
        for victim in VICTIMS:
            rows.append(f"| {kind} | {victim} | " + " | ".join(
                cell_text(by[(kind, victim, k)]) if (kind, victim, k) in by else "-"
                for k in kernels) + " |")
    views = sorted({f"{c.kernel}: {c.view}" for c in all_cells if c.view})
    notes = [
        "",
        f"A cell: the longest part of one of the victim's waits that the walk kept "
        f"from it (bold: 1 ms or more, the walk stalls that operation), measured "
        f"under the {clock} clock of a 2-vCPU TCG guest, 256 MiB in one VMA, then "
        f"scaled to a walk of 25M PTEs in one VMA where the kind's lock grows with "
        f"its VMA; \"no (x)\": the walk kept it at most x. Views: {'; '.join(views)}.",
    ]
    return "\n".join(head + rows + notes)


def write(out: Path, all_cells: list[Cell], kernels: list[str], clock: str) -> str:
    table = render(all_cells, kernels, clock)
    (out / "table.md").write_text(table + "\n")
    (out / "table.json").write_text(json.dumps(
        {"schema": "ptwalk.stall-table/1", "clock": clock, "kernels": kernels,
         "incident_ptes": INCIDENT_PTES, "stall_ns": STALL_NS,
         "cells": [asdict(c) for c in all_cells]}, indent=1) + "\n")
    return table
