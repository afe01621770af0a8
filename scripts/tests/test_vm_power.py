# SPDX-License-Identifier: GPL-2.0
"""make test's quick power check of ptwalk compare under icount: one boot of
6.12 cloud (else 6.1 cloud), 3 pairs of 4 vs 4 runs of clear_refs, B with
inject_delay_ns fitted to +10% on clear_refs ns/PTE. Every pair must be
flagged, no A/A of consecutive baselines may be, the measured effect must be
within 20% of the intended one, and the comparison must use the A/A
calibration measured under icount. make bench runs the full figure (+10% and
+2%, 10 pairs, both clocks, 6.1 and 6.12)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import bench_vm  # noqa: E402
from ptwalk_vm import config as vmconfig  # noqa: E402
from ptwalk_vm.pytest_plugin import BOOT_SLOTS, skip_or_fail, vm_unavailable  # noqa: E402

PAIRS, RUNS, PCT = 3, 4, 10


@pytest.mark.vm
def test_icount_power_quick(vm_config: vmconfig.Config) -> None:
    k, why = None, []
    for kid in ("6.12-cloud-amd64", "6.1-cloud-amd64"):
        try:
            k = bench_vm.find_kernel(vm_config, kid)
            break
        except vmconfig.ConfigError as e:
            why.append(str(e))
    if k is None:
        skip_or_fail("; ".join(why))
        return
    gone = vm_unavailable(vm_config, k)
    if gone:
        skip_or_fail(gone)
        return
    with BOOT_SLOTS:  # its guests one at a time, in a slot of the session's
        pw: Any = bench_vm.power(vm_config, k, pairs=PAIRS, runs=RUNS, pct=PCT, clock="icount")
    assert not pw.error, pw.error
    assert (pw.accel, pw.clock) == ("tcg", "icount")
    assert "aa-noise-vm-tcg-icount.json" in pw.noise, \
        f"not the icount A/A calibration (bench_vm.py --calibrate --clock icount): {pw.noise}"
    assert pw.sized_ok, (f"intended +{PCT}%, measured {pw.effect:+.2%} "
                         f"(pairs {[f'{e:+.2%}' for e in pw.effects]}); {pw.sizing}")
    assert pw.flagged == PAIRS, f"+{PCT}% flagged in {pw.flagged} of {PAIRS} pairs"
    assert pw.aa_pairs == PAIRS - 1 and pw.aa_flagged == 0, \
        f"A/A: {pw.aa_flagged} of {pw.aa_pairs} consecutive baselines flagged"
