# SPDX-License-Identifier: GPL-2.0
"""The stall table's cells (scripts/ptwalk_report/stall_table.py) from
results shaped as `ptwalk run` writes them, and its command's bad input.
The table itself, run on Debian's kernels, is results/reference/stall-table."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from ptwalk_report import stall_table as st

REPO = Path(__file__).resolve().parents[2]
MS = 1_000_000


def doc(backend: str, stalls: list[dict[str, Any]] | None,
        vma_waits: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    kv: dict[str, Any] = {}
    if stalls is not None:
        kv["stalls"] = stalls
    if vma_waits is not None:
        kv["vma_locks"] = {"available": True, "waits": vma_waits}
    return {"backend": backend, "kernel": {"release": "7.3.4+deb13-cloud-amd64"},
            "workload": {"size_start": {"entries": 62_500}}, "kernel_view": kv,
            "validation": {"stalls": {"agree": True}}}


LOCKING = {"kinds": {
    "clear_refs": {"lock_mode": "write", "lock_unit": "whole_walk"},
    "smaps": {"lock_mode": "none", "lock_unit": "vma_lock",
              "changed": {"before": "7.1", "since": "7.2"}},
    "pagemap": {"lock_mode": "read", "lock_unit": "pmd_chunk"}}}


def by(cells: list[st.Cell]) -> dict[tuple[str, str], st.Cell]:
    return {(c.kind, c.victim): c for c in cells}


def test_cells_from_results() -> None:
    results: dict[str, dict[str, Any] | None] = {
        # clear_refs holds mmap_lock for write over the walk: the mmap
        # victim's wait is the walk's; the fault victim's 0.5 ms is no stall
        "clear_refs": doc("module", [
            {"victim": "mmap", "walker_held_ns": 30 * MS, "vma_chain_ns": 0},
            {"victim": "fault", "walker_held_ns": MS // 2},
            {"victim": "mmap", "walker_held_ns": 10 * MS}]),
        # 7.3 smaps: the mmap victim's wait is the walk's by the chain
        # only, the vma victim's is its own VMA wait
        "smaps": doc("module", [{"victim": "mmap", "walker_held_ns": 0,
                                 "vma_chain_ns": 19 * MS}],
                     [{"victim": "vma", "walker_held_ns": 20 * MS}]),
        # pagemap holds per 2 MiB: the measured part is the estimate
        "pagemap": doc("module", [{"victim": "mmap", "walker_held_ns": 2 * MS}]),
        # a split-less view: no figure, and why
        "smaps_rollup": doc("syscall", None),
        "pagemap_scan": None,
    }
    # a run the victims' clocks contradict: no figure, and why
    bad = doc("module", [])
    bad["validation"] = {"stalls": {"agree": False,
                                    "disagreements": ["recall 0/36 = 0.000 < 0.95"]}}
    c2 = by(st.cells("6.12", {"pagemap_scan": bad}, LOCKING))
    assert c2[("pagemap_scan", "mmap")].walk_held_ns is None
    assert "DISAGREES" in c2[("pagemap_scan", "mmap")].note
    assert "recall 0/36" in c2[("pagemap_scan", "mmap")].note
    c = by(st.cells("7.3", results, LOCKING, {"pagemap_scan": "not in this kernel (exit 4)"}))
    m = c[("clear_refs", "mmap")]
    assert m.stalls is True and m.walk_held_ns == 30 * MS and m.view == "module"
    assert m.estimate_ns == 30 * MS * 400  # 25M PTEs / 62,500
    assert m.lock == "write, whole_walk" and m.changed == ""
    assert c[("clear_refs", "fault")].stalls is False
    assert c[("clear_refs", "fault")].estimate_ns is None
    assert c[("clear_refs", "read")].walk_held_ns == 0
    assert c[("smaps", "mmap")].walk_held_ns == 19 * MS
    assert c[("smaps", "vma")].walk_held_ns == 20 * MS
    assert c[("smaps", "vma")].estimate_ns == 20 * MS * 400
    assert c[("smaps", "vma")].changed.startswith("7.2")
    assert c[("pagemap", "mmap")].estimate_ns == 2 * MS
    assert c[("smaps_rollup", "mmap")].walk_held_ns is None
    assert "no stall view" in c[("smaps_rollup", "mmap")].note
    assert c[("pagemap_scan", "vma")].note == "not in this kernel (exit 4)"

    table = st.render(list(c.values()), ["7.3"], "icount")
    assert "| clear_refs | mmap | **30.0 ms**; 25M PTEs: 12.00 s |" in table
    assert "| clear_refs | fault | no (500 us) |" in table
    assert "| smaps | (lock) | none, vma_lock; changed in 7.2" in table
    assert "| pagemap_scan | read | - (not in this kernel (exit 4)) |" in table


def test_the_command_refuses_bad_input(tmp_path: Path) -> None:
    cmd = [str(REPO / "scripts" / "ptwalk-stall-table")]
    for args in (["--size", "big"], ["--series", ""], ["--reuse", "--out", str(tmp_path / "x")]):
        p = subprocess.run(cmd + args, capture_output=True, text=True, timeout=60)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    p = subprocess.run(cmd + ["--help"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "25M PTEs" in p.stdout


def test_the_reference_table_is_its_results(tmp_path: Path) -> None:
    """The kept table is what its kept results give, read again."""
    ref = REPO / "results" / "reference" / "stall-table"
    want = json.loads((ref / "table.json").read_text())
    out = tmp_path / "again"
    shutil.copytree(ref, out)
    p = subprocess.run([str(REPO / "scripts" / "ptwalk-stall-table"), "--reuse", "--out",
                        str(out), "--series", ",".join(want["kernels"]),
                        "--clock", want["clock"]], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert (out / "table.md").read_text() == (ref / "table.md").read_text()
    # every kernel in it booted: each cell has its figure, or why not
    for c in json.loads((out / "table.json").read_text())["cells"]:
        assert c["walk_held_ns"] is not None or c["note"], c
