# SPDX-License-Identifier: GPL-2.0
"""The boot-reliability boots of one kernel (scripts/tests/
test_vm_boot_reliability.py judges them): BOOTS boots of one initramfs that
runs scripts/vm/boot-cycle.sh, the kernel alone and then ptwalk.ko loaded,
walked through and unloaded. The session starts them in the background
after the kernels' suite boots (pytest_plugin.reliability_boots), so that
both guest slots stay busy while the tests with a guest of their own run."""
from __future__ import annotations

import io
import os
from pathlib import Path
from contextlib import AbstractContextManager
from typing import Any

from . import config
from . import vm as pipeline
from .config import Config, Kernel
from .parse import VmResult

BOOTS = int(os.environ.get("PTWALK_VM_BOOTS", "5"))
WALKER = config.PROJECT / "module" / "tests" / "walker"
SCRIPT = "scripts/vm/boot-cycle.sh"


def missing(k: Kernel) -> str | None:
    """Why the boots cannot run for K (the test fails with it), or None."""
    if (k.ko is None and not k.moduleless) or not WALKER.is_file():
        return f"ptwalk.ko for {k.release} or {WALKER} not built (make module-matrix)"
    return None


def boots(cfg: Config, k: Kernel, out: Path,
          slots: AbstractContextManager[Any]) -> list[VmResult]:
    """BOOTS boots of one initramfs, one after the other, each in a guest
    slot of the session (SLOTS: pytest_plugin.BOOT_SLOTS)."""
    assert k.ko is not None or k.moduleless
    files = [(config.PROJECT / SCRIPT, f"/ptwalk/{SCRIPT}"),
             (WALKER, "/ptwalk/module/tests/walker")]
    if k.ko is not None:
        files.append((k.ko, "/ptwalk/module/ptwalk.ko"))
    ko = "/ptwalk/module/ptwalk.ko" if k.ko is not None else "none"
    opts = pipeline.RunOptions(timeout=180.0, mem="1G", smp=2, accel="tcg",
                               default_files=False, add=files, log=io.StringIO())
    initrd = out / "initramfs.cpio.gz"
    pipeline.build_initramfs(cfg, k, f"sh /ptwalk/{SCRIPT} {ko} /ptwalk/module/tests/walker",
                             opts, initrd)
    results = []
    for i in range(BOOTS):
        with slots:
            results.append(pipeline.boot_step(cfg, k, initrd, opts, out / f"boot-{i:02d}",
                                              "tcg", "boot reliability"))
    return results
