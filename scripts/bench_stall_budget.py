#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make bench, stall budget part: inside Debian 6.1 and 6.12 cloud kernels
(TCG, guest time by instruction count), healthy clear_refs runs and the
same with ptwalk.ko's inject_delay_ns sized for walks that hold mmap_lock
twice as long, judged by results/budgets/vm-tcg-icount.json
(scripts/ptwalk_vm/stall_budget.py). Prints per kernel the intended and
measured effect on the hold, and the worst walk-held part against its
limit for each set; and smaps_rollup's runs-complete verdict. Figures, not
assertions (scripts/tests/test_vm_stall_budget.py asserts them)."""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ptwalk_vm import config as vmconfig  # noqa: E402
from ptwalk_vm import stall_budget  # noqa: E402
from ptwalk_vm import vm as pipeline  # noqa: E402
from ptwalk_vm.pytest_plugin import vm_unavailable  # noqa: E402

KERNELS = ("6.1-cloud-amd64", "6.12-cloud-amd64")
RUNS = 3


def main() -> int:
    print("stall budget in the VM (TCG, icount; results/budgets/vm-tcg-icount.json):")
    cfg = vmconfig.load()
    ks, _ = cfg.matrices(cfg.test_matrices)
    for name in KERNELS:
        k = next((x for x in ks if x.id == name), None)
        why = ("not in the matrix" if k is None else vm_unavailable(cfg, k)
               or (None if k.ko else "ptwalk.ko not built (make module-matrix)"))
        if why:
            print(f"  {name}: not measured: {why}")
            continue
        with tempfile.TemporaryDirectory(prefix="ptwalk-bench-stall-") as d:
            def run_in_vm(kernel, command, files=(), **kw):
                add = [(vmconfig.PROJECT / f, f"/ptwalk/{f}") for f in files]
                return pipeline.run_in_vm(cfg, kernel, command,
                                          pipeline.RunOptions(add=add, **kw), Path(d) / "vm")
            try:
                o = stall_budget.run(run_in_vm, k, Path(d) / "out", runs=RUNS)
            except AssertionError as e:
                print(f"  {name}: not measured: {str(e).splitlines()[0]}")
                continue
            h, x = o.worst("H", "stall-walk-held"), o.worst("X", "stall-walk-held")
            s = o.worst("S", "runs-complete")
            print(f"  {name}: walks held {o.hold_ratio():.2f}x as long (intended 2.00x), "
                  f"{RUNS} runs a set")
            print(f"    healthy  {h.verdict}: {h.figure} ({h.limit})")
            print(f"    injected {x.verdict}: {x.figure} ({x.limit})")
            print(f"    smaps_rollup over 64 VMAs, runs-complete {s.verdict}: {s.figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
