# SPDX-License-Identifier: GPL-2.0
"""Helpers for tests that drive build/ptwalk on the host."""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PTWALK = REPO / "build" / "ptwalk"


def run_ptwalk(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PTWALK), *args], capture_output=True, text=True,
                          timeout=timeout)


def load(path: Path) -> dict[str, Any]:
    with open(path) as f:
        return json.load(f)


def ptwalk_children() -> list[int]:
    """PIDs of ptwalk's workload/scanner processes still alive."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            comm = (d / "comm").read_text().strip()
            state = (d / "stat").read_text().split()[2]
        except OSError:
            continue
        if comm in ("ptwalk-workload", "ptwalk-scanner") and state != "Z":
            pids.append(int(d.name))
    return pids


def wait_no_children(timeout: float = 5.0) -> list[int]:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        left = ptwalk_children()
        if not left:
            return []
        time.sleep(0.05)
    return ptwalk_children()


def is_root() -> bool:
    return os.geteuid() == 0
