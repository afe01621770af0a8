# SPDX-License-Identifier: GPL-2.0
"""ptwalk.ko's own in-VM selftest (module/tests/vm-selftest.sh) in each Debian
kernel build: bad parameters refused, hooks listed, each walk kind recorded
exactly once, a target exiting mid-walk, 20 load/unload cycles while walkers
run, rmmod with walks in flight - and a kernel log free of oops/WARN/BUG.
It runs last in the boot each kernel's suites share (ptwalk_vm/suites.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ptwalk_vm.pytest_plugin import KernelSuites, require_module

REPO = Path(__file__).resolve().parents[2]
WALKER = REPO / "module" / "tests" / "walker"


def test_module_vm_selftest(vm_kernel: Any, kernel_suites: KernelSuites) -> None:
    require_module(vm_kernel)
    if not WALKER.exists():
        pytest.fail(f"{WALKER} missing (make -C module walker)")
    r = kernel_suites(vm_kernel).suite("module-selftest")
    print(r.stdout[-4000:])
    assert not r.timed_out, f"{r.problem()}\nconsole tail:\n{r.console[-4000:]}"
    assert not r.findings, f"kernel log problems: {r.findings}"
    lines = r.stdout.splitlines()
    assert "TAP version 13" in lines
    bad = [ln for ln in lines if ln.startswith("not ok")]
    assert not bad, bad
    assert sum(ln.startswith("ok ") for ln in lines) >= 20
    assert any("load/unload" in ln for ln in lines if ln.startswith("ok "))
    assert r.returncode == 0, r.problem()
