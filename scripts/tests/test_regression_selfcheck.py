# SPDX-License-Identifier: GPL-2.0
"""Regression self-check: inside one VM kernel, ptwalk.ko's inject_delay_ns
makes clear_refs walks slower by a set amount; ptwalk-compare must flag
both injected regressions and must not flag the same kernel measured twice
(A/A). With KVM the regressions are about 10% and 25%, on the real-time
clock. Under TCG the guest runs on the icount clock, which counts its
instructions (A/A noise 0.15%, results/budgets/aa-noise-vm-tcg-icount.json):
there they are about 2% and 10%, the change the project says icount sees.
Not real time under TCG: walks of one kernel vary by 12-30% from run to run
there, and more beside the other guest make test runs: an A/A of 5 runs
against 5 differed by +29% (q 0.008) in stop 50's CI, past the 18.4% its
calibration had measured with the host to itself. `make bench` gives the
real-time figure (the smallest injected regression detected).
The run is the sample of ptwalk compare: 5 interleaved runs a set, so that
exact Mann-Whitney can decide (3 runs against 3 cannot reach p < 0.05)."""
from __future__ import annotations

import json
import statistics
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ptwalk_vm.pytest_plugin import matrix_kernel

REPO = Path(__file__).resolve().parents[2]
COMPARE = REPO / "scripts" / "ptwalk-compare"
RUNS = 5


def _nspte(*dirs: Path) -> float:
    vals = [w["ns_per_pte"] for d in dirs for f in sorted(d.glob("*.json"))
            for w in json.loads(f.read_text())["walks"]]
    return statistics.median(vals)


def test_injected_regressions_are_flagged(vm_config: Any, run_in_vm: Any, tmp_path: Path) -> None:
    k = matrix_kernel(vm_config, "cloud-amd64")
    if k.ko is None:
        pytest.fail(f"ptwalk.ko not built for {k.release} (make module-matrix)")
    from ptwalk_vm import vm as pipeline
    accel, _ = pipeline.choose_accel(vm_config, k, pipeline.RunOptions())
    clock, (lo, hi) = ("realtime", (10, 25)) if accel == "kvm" else ("icount", (2, 10))
    r = run_in_vm(k, f"sh scripts/vm/regression-selfcheck.sh /ptwalk/module/ptwalk.ko "
                     f"/ptwalk/build/ptwalk 128M {RUNS} {lo} {hi}",
                  files=["scripts/vm/regression-selfcheck.sh"], default_files=True,
                  timeout=900.0, smp=1, accel=accel, clock=clock)  # one vCPU: no
    # vCPU multiplexing noise
    print(r.stdout[-3000:])
    assert r.returncode == 0 and not r.findings, (r.problem(), r.stdout[-2000:])
    for name, data in r.files.items():
        dest = tmp_path / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
    R1, R2 = f"R{lo}", f"R{hi}"
    sets = {s: tmp_path / s for s in ("A1", "A2", R1, R2)}
    for s, d in sets.items():
        assert len(list(d.glob("*.json"))) == RUNS, s
    base = _nspte(sets["A1"], sets["A2"])
    effect = {s: _nspte(sets[s]) / base - 1 for s in ("A1", "A2", R1, R2)}
    print("effect on ns/PTE:", {s: f"{v:+.1%}" for s, v in effect.items()})
    # the injection did what it was sized to do, the larger one more: the
    # icount clock runs a busy-wait as the instructions it takes; under KVM
    # a busy host overshoots it, so there the upper bound is loose
    up = 10 if clock == "realtime" else 1.5
    assert 0.5 * lo / 100 <= effect[R1] <= up * lo / 100, effect
    assert 0.5 * hi / 100 <= effect[R2] <= up * hi / 100, effect
    assert effect[R2] > effect[R1], effect

    def compare(a: str, b: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["/usr/bin/python3", str(COMPARE), str(sets[a]), str(sets[b])],
                              capture_output=True, text=True, timeout=120)

    aa = compare("A1", "A2")
    print(aa.stdout[-1500:])
    assert aa.returncode == 0, "A/A flagged as a regression:\n" + aa.stdout[-2000:]
    # judged by the A/A calibration of the clock the runs were taken on
    assert f"clock {clock}" in aa.stdout, aa.stdout[-2000:]
    for s in (R1, R2):
        p = compare("A1", s)
        print(p.stdout[-1500:])
        assert p.returncode == 1, f"{s} not flagged:\n" + p.stdout[-2000:]
        assert "REGRESSION" in p.stdout
