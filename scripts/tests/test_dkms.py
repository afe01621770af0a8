# SPDX-License-Identifier: GPL-2.0
"""DKMS: `dkms add` and `dkms build` of the module for each installed 6.1
kernel, from a temporary copy that is removed afterwards."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_dkms_add_build() -> None:
    if os.geteuid() != 0:
        pytest.skip("dkms add/build needs root")
    if shutil.which("dkms") is None:
        pytest.fail("dkms is not installed (scripts/deps.sh module)")
    p = subprocess.run([str(REPO / "module" / "test-dkms.sh")], capture_output=True,
                       text=True, timeout=900)
    print(p.stdout[-3000:], p.stderr[-3000:])
    assert p.returncode == 0, p.stderr[-2000:]
    # nothing left registered
    st = subprocess.run(["dkms", "status", "ptwalk"], capture_output=True, text=True)
    assert "ptwalk" not in st.stdout, st.stdout
    # dkms skips a kernel built without kprobes instead of building for it
    assert "a kernel without CONFIG_KPROBES is skipped" in p.stdout, p.stdout[-2000:]
