# SPDX-License-Identifier: GPL-2.0
"""Regression self-check: inside one VM kernel, ptwalk.ko's inject_delay_ns
makes clear_refs walks slower by a set amount; ptwalk-compare must flag
both injected regressions and must not flag the same kernel measured twice
(A/A). With KVM the regressions are about 10% and 25%. Under TCG, walks of
one kernel vary by about 30% from run to run (measured on the development
VM), which no quick test resolves to 10%: there the regressions are about
50% and 100%, and `make bench` reports the smallest one detected.
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
    lo, hi = (10, 25) if accel == "kvm" else (50, 100)
    r = run_in_vm(k, f"sh scripts/vm/regression-selfcheck.sh /ptwalk/module/ptwalk.ko "
                     f"/ptwalk/build/ptwalk 128M {RUNS} {lo} {hi}",
                  files=["scripts/vm/regression-selfcheck.sh"], default_files=True,
                  timeout=900.0, smp=1)  # one vCPU: no vCPU multiplexing noise
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
    # the injection did at least roughly what it was sized to do, the larger
    # one more; under TCG on a busy host the busy-wait overshoots (measured:
    # +294% for 50%, +634% for 100%), so the upper bound is loose
    assert 0.3 * lo / 100 <= effect[R1] <= 10 * lo / 100, effect
    assert 0.3 * hi / 100 <= effect[R2] <= 10 * hi / 100, effect
    assert effect[R2] > effect[R1], effect

    def compare(a: str, b: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["/usr/bin/python3", str(COMPARE), str(sets[a]), str(sets[b])],
                              capture_output=True, text=True, timeout=120)

    aa = compare("A1", "A2")
    print(aa.stdout[-1500:])
    assert aa.returncode == 0, "A/A flagged as a regression:\n" + aa.stdout[-2000:]
    for s in (R1, R2):
        p = compare("A1", s)
        print(p.stdout[-1500:])
        assert p.returncode == 1, f"{s} not flagged:\n" + p.stdout[-2000:]
        assert "REGRESSION" in p.stdout
