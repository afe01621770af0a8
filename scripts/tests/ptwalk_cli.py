# SPDX-License-Identifier: GPL-2.0
"""Helpers for tests that drive build/ptwalk on the host."""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any, TypeVar

from ptwalk_report import results
from ptwalk_report.result_types import Result, parse

REPO = Path(__file__).resolve().parents[2]
PTWALK = REPO / "build" / "ptwalk"
T = TypeVar("T")


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


def load_result(path: Path) -> Result:
    """A ptwalk.result/1 file, typed (results.load raises InputError for
    a document of another schema)."""
    return results.load([path])[0]


def parse_result(name: str, text: bytes | str) -> Result:
    """A ptwalk.result/1 document returned as text (a guest's file), typed."""
    return parse(Path(name), json.loads(text))


def run_result(tmp_path: Path, *args: str,
               timeout: float = 120) -> tuple[Result, subprocess.CompletedProcess[str]]:
    """`ptwalk run ARGS --out TMP/r.json`, which must succeed, and its result."""
    out = tmp_path / "r.json"
    p = run_ptwalk("run", *args, "--out", str(out), timeout=timeout)
    assert p.returncode == 0, p.stderr
    return load_result(out), p


def known(v: T | None, what: object = None) -> T:
    """A member the test needs present (absent, it is a failure, as the
    JSON's KeyError was)."""
    assert v is not None, what
    return v


def meminfo(key: str) -> int:
    """A /proc/meminfo figure by its name (0 when not listed), in its unit."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    return 0


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
