# SPDX-License-Identifier: GPL-2.0
"""The working-set table (scripts/ptwalk-working-set-table): a working-set
method against the known working set of `ptwalk run --working-set`, per
kernel and pattern, on the three axes of issue 35, each from its own view:

- accuracy: the method's estimate per window against the pages the
  workload wrote (result `working_set.accuracy`: windows within the
  truth, median |error|, bias, worst);
- cost: the method's walks' time in their syscalls per window, per GiB
  watched, and the share of a core (`working_set.cost`);
- stall: the longest part of one of the victims' waits that the method's
  walks kept from them (the stall split, as the stall table reads it),
  given only where the victims' own clocks confirm the view's stalls.

The methods: clear_refs + smaps Referenced (the wss scanner) and DAMON
vaddr (the damon scanner: its cost is the kdamond's CPU time, and it has
no walk of its own to split the victims' waits by); a kernel or a run
without one gives a row that says why, never a number.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ptwalk_report import stall_table as st

# the patterns each kernel runs: a hot quarter, a drifting quarter, and a
# new half each round (SHARE,PATTERN of --working-set)
SPECS = ("0.25,hot", "0.25,drift", "0.5,uniform")
# the methods, as their scanners are named; an item of scripts/vm/
# table-runs.sh is SPEC for wss, damon:SPEC for damon
METHODS = ("wss", "damon")


def file_name(spec: str, method: str = "wss") -> str:
    return ("ws-" if method == "wss" else f"{method}-") + spec.replace(",", "-")


def item(spec: str, method: str) -> str:
    return spec if method == "wss" else f"{method}:{spec}"


@dataclass
class Row:
    kernel: str
    spec: str
    release: str = ""
    view: str = ""
    windows: int | None = None
    within: int | None = None
    median_abs_error: float | None = None
    bias: float | None = None
    max_abs_error: float | None = None
    ns_per_gib: float | None = None
    core_share: float | None = None
    stall_ns: int | None = None      # None: no run, or no confirmed stall view
    stall_note: str = ""
    note: str = ""                   # why there is no row
    method: str = "wss"


def row(kernel: str, spec: str, doc: dict[str, Any] | None, why: str = "",
        method: str = "wss") -> Row:
    r = Row(kernel, spec, method=method)
    if doc is None:
        r.note = why or "no run"
        return r
    r.release = str((doc.get("kernel") or {}).get("release", ""))
    r.view = str(doc.get("backend", ""))
    ws = doc.get("working_set") or {}
    acc, cost = ws.get("accuracy"), ws.get("cost")
    if not acc or not cost:
        r.note = str(ws.get("why") or "no working_set in the result")
        return r
    r.windows, r.within = int(acc["windows"]), int(acc["within_truth"])
    r.median_abs_error = float(acc["median_abs_error"])
    r.bias, r.max_abs_error = float(acc["bias"]), float(acc["max_abs_error"])
    r.ns_per_gib, r.core_share = float(cost["ns_per_gib_p50"]), float(cost["core_share"])
    kv = doc.get("kernel_view") or {}
    val = (doc.get("validation") or {}).get("stalls") or {}
    if ws.get("damon"):
        r.stall_note = "no walk of its own: the kdamond's holds are not split"
    elif "stalls" not in kv:
        r.stall_note = f"no stall view with the {r.view} backend"
    elif val.get("agree") is not True:
        r.stall_note = (f"{r.view} view DISAGREES with the victims' clocks: "
                        + "; ".join(val.get("disagreements") or ["no validation"]))
    else:
        victims = (doc.get("scenario") or {}).get("victims") or []
        r.stall_ns = max((st.walk_held(doc, v) for v in victims), default=0)
    return r


def pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:+.1f}%"


def row_text(r: Row) -> str:
    if r.windows is None:
        return f"| {r.kernel} | {r.method} | {r.spec} | - ({r.note}) | | | |"
    stall = st.fmt_ns(r.stall_ns) if r.stall_ns is not None else f"- ({r.stall_note})"
    return (f"| {r.kernel} | {r.method} | {r.spec} | {r.within}/{r.windows} within; median "
            f"{abs(r.median_abs_error or 0) * 100:.1f}%, bias {pct(r.bias)}, worst "
            f"{(r.max_abs_error or 0) * 100:.1f}% | {(r.ns_per_gib or 0) / 1e6:.1f} ms/GiB, "
            f"{(r.core_share or 0) * 100:.2g}% of a core | {stall} | {r.view} |")


def render(rows: list[Row], clock: str, size: str) -> str:
    head = ["| kernel | method | working set | accuracy (windows within the truth; error) "
            "| cost (a window's walks; damon: the kdamond's CPU) "
            "| longest wait kept from a victim | view |",
            "|---|---|---|---|---|---|---|"]
    notes = [
        "",
        f"Methods: wss, clear_refs then, an interval later, smaps Referenced of the mapping "
        f"(as cAdvisor's container_referenced_bytes); damon, DAMON vaddr with 5 ms "
        f"sampling and one 200 ms interval per aggregation, the regions with accesses "
        f"(in a guest, damon_stat turned off first). {size} anon in one "
        f"VMA, 200 ms interval, victims mmap and fault; guests: 2-vCPU TCG, {clock} clock; "
        f"host: this machine's kernel, real time. An error is against the range of pages "
        f"really written in the window; below it, Referenced missed pages (clear_refs "
        f"does not flush the TLB, so writes through a cached translation are not seen: "
        f"module/KERNEL-FACTS.md 30; TCG guests model no such TLB, so only the host "
        f"shows it). The wait: the longest part of one victim operation's wait that the "
        f"method's walks held the lock for.",
    ]
    return "\n".join(head + [row_text(r) for r in rows] + notes)


def write(out: Path, rows: list[Row], clock: str, size: str) -> str:
    table = render(rows, clock, size)
    (out / "table.md").write_text(table + "\n")
    (out / "table.json").write_text(json.dumps(
        {"schema": "ptwalk.working-set-table/1", "clock": clock, "size": size,
         "methods": list(METHODS), "rows": [asdict(r) for r in rows]},
        indent=1) + "\n")
    return table
