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


# Every ptwalk a test starts carries this in its environment, and so do its
# children: leftovers are found by it, whatever else runs on the machine.
TAG = f"PTWALK_TEST_TAG={os.getpid()}-{time.monotonic_ns()}"


def tagged_env() -> dict[str, str]:
    env = dict(os.environ)
    k, v = TAG.split("=", 1)
    env[k] = v
    return env


def run_ptwalk(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PTWALK), *args], capture_output=True, text=True,
                          timeout=timeout, env=tagged_env())


def load(path: Path) -> dict[str, Any]:
    with open(path) as f:
        return json.load(f)


def ptwalk_children() -> list[int]:
    """PIDs of processes started by this test session's ptwalk runs."""
    pids = []
    tag = TAG.encode()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            env = (d / "environ").read_bytes()
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if tag in env.split(b"\0") and state != "Z":
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
