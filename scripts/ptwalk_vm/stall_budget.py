"""The stall budget in a VM (scripts/vm/stall-budget.sh): healthy clear_refs
runs (H), the same with ptwalk.ko's inject_delay_ns sized in the boot for
walks that hold mmap_lock twice as long (X), and smaps_rollup over 64 VMAs
with a writer (S), judged by results/budgets/vm-tcg-icount.json. Shared by
scripts/tests/test_vm_stall_budget.py and make bench."""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from . import config

BUDGETS = config.PROJECT / "results" / "budgets" / "vm-tcg-icount.json"
SCRIPT = "scripts/vm/stall-budget.sh"
SETS = ("H", "X", "S")


@dataclass
class Outcome:
    stdout: str
    dirs: dict[str, Path] = field(default_factory=dict)
    verdicts: dict[str, list[Any]] = field(default_factory=dict)

    def hold_ratio(self) -> float:
        """Median walk hold of X over H: what the injection did."""
        return _hold(self.dirs["X"]) / _hold(self.dirs["H"])

    def worst(self, s: str, budget: str) -> Any:
        vs = [v for v in self.verdicts[s] if v.budget.startswith(budget)]
        assert vs, f"set {s}: no {budget} verdict"
        return vs[0]


def _hold(d: Path) -> float:
    from ptwalk_report import results as res
    return statistics.median(w.lock_hold_ns for r in res.load(sorted(d.glob("*.json")))
                             for w in r.walks if w.lock_hold_ns is not None)


def run(run_in_vm: Callable[..., Any], kernel: Any, out: Path, runs: int = 1) -> Outcome:
    """One boot of `kernel` (TCG, clock icount); the sets under out/."""
    from ptwalk_report import budgets as bud
    from ptwalk_report import results as res
    r = run_in_vm(kernel, f"sh {SCRIPT} /ptwalk/module/ptwalk.ko /ptwalk/build/ptwalk 64M {runs}",
                  files=[SCRIPT], default_files=True, env={"SMAPS_ROLLUP": "1"},
                  timeout=900.0, clock="icount", mem="1G")
    if r.returncode != 0 or r.findings or r.timed_out:
        raise AssertionError(f"{r.problem()}\n{r.stdout[-2000:]}\n{r.stderr[-1500:]}")
    for name, data in r.files.items():
        dest = out / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
    o = Outcome(r.stdout)
    budgets = bud.load_budgets(BUDGETS)
    for s in SETS:
        o.dirs[s] = out / s
        o.verdicts[s] = bud.evaluate(budgets, res.load([out / s]))
    return o
