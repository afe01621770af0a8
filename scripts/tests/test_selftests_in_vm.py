# SPDX-License-Identifier: GPL-2.0
"""The selftests (kselftest harness, KTAP) inside each Debian kernel build (in
the boot its suites share, ptwalk_vm/suites.py),
ptwalk.ko loaded: they pass (or skip with a reason), the module's own checks
run rather than skip, and a large inject_delay_ns makes the cost test fail
its budget. Harness test names are fixture.variant.test; a skipped test's
line is "ok N # SKIP reason" (6.1's harness) or "ok N name # SKIP reason"."""
from __future__ import annotations

import re
from typing import Any

import pytest

from ptwalk_vm.pytest_plugin import KernelSuites


def test_selftests_with_module(vm_kernel: Any, kernel_suites: KernelSuites) -> None:
    if vm_kernel is not None and vm_kernel.ko is None:
        pytest.fail(f"ptwalk.ko is not built for {vm_kernel.release} (make module-matrix)")
    r = kernel_suites(vm_kernel).suite("selftests")
    out = r.stdout
    print(out[-5000:])
    assert not r.timed_out and not r.findings, r.problem()
    tap = {n[:-4]: d.decode() for n, d in r.files.items() if n.endswith(".tap")}
    for name in ("ptwalk_refs", "ptwalk_smaps", "ptwalk_module", "ptwalk_cost"):
        assert name in tap, sorted(r.files)
        assert "TAP version 13" in tap[name]
        plan = re.search(r"^1\.\.(\d+)$", tap[name], re.M)
        assert plan, (name, tap[name][-2000:])
        results = re.findall(r"^(?:not )?ok \d+ ", tap[name], re.M)
        assert len(results) == int(plan.group(1)), (name, tap[name][-2000:])
        bad = [ln for ln in tap[name].splitlines() if ln.startswith("not ok")]
        assert not bad, (name, bad)
        # every skip says why
        bare = re.findall(r"^ok \d+ .*# SKIP\s*$", tap[name], re.M)
        assert not bare, (name, bare)
    # with the module loaded its checks run: none of them skips
    mod = tap["ptwalk_module"]
    for backing in ("anon", "shmem", "file"):  # thp: skips where THP is off
        for check in ("pte_slots", "walk_recorded_once"):
            assert re.search(rf"^ok \d+ module\.{backing}\.{check}$", mod, re.M), mod
    assert "# SKIP ptwalk module not loaded" not in mod
    # calibrated on this kernel, its cost test passes; made slower by
    # injection, it fails that budget, with the figures
    assert "exit 0" in r.files["calibrated_cost.rc"].decode(), \
        r.files["calibrated_cost.tap"][-2000:]
    assert "exit 1" in r.files["inject_cost.rc"].decode(), r.files["inject_cost.rc"]
    inj = r.files["inject_cost.tap"].decode()
    assert re.search(r"^not ok \d+ cost\.clear_refs\.", inj, re.M), inj[-2000:]
    assert "> budget" in inj and "PTEs" in inj
    assert r.returncode == 0, out[-3000:]
