# SPDX-License-Identifier: GPL-2.0
"""`ptwalk monitor`: catches a walker it does not know about, with its target
and the task that waited behind it."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from ptwalk_cli import PTWALK, is_root, load, run_ptwalk, tagged_env


@pytest.mark.parametrize("backend", ["bpf", "tracepoint"])
def test_monitor_catches_clear_refs_walker(tmp_path: Path, backend: str) -> None:
    if not is_root():
        pytest.skip("ptwalk monitor needs root (system-wide perf_event_open)")
    out = tmp_path / "m.json"
    mon = subprocess.Popen([str(PTWALK), "monitor", "--backend", backend, "--duration", "8s",
                            "--out", str(out)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=tagged_env())
    try:
        # wait until it watches
        deadline = time.monotonic() + 10
        line = ""
        assert mon.stderr is not None
        while "watching" not in line and time.monotonic() < deadline:
            line = mon.stderr.readline()
            if not line and mon.poll() is not None:
                break
        if mon.poll() is not None:
            pytest.fail("monitor exited early: " + line + mon.stderr.read())
        # an unrelated walker: ptwalk run with the syscall backend
        r = run_ptwalk("run", "--size", "512M", "--scanner", "clear_refs",
                       "--interval", "200ms", "--duration", "2s", "--victims", "mmap",
                       "--backend", "syscall", "--quiet", "--out", str(tmp_path / "r.json"))
        assert r.returncode == 0, r.stderr
        run = load(tmp_path / "r.json")
        stdout, err = mon.communicate(timeout=30)
    finally:
        if mon.poll() is None:
            mon.kill()
    assert mon.returncode == 0, err
    m = load(out)
    assert m["schema"] == "ptwalk.monitor/1"
    assert m["backend"] == backend
    scanner = run["walks"][0]["walker_pid"]
    workload = run["workload"]["pid"]
    # the scanner's holds of the workload's mm (it also briefly holds its own)
    holds = [h for h in m["holds"] if h["holder"]["tgid"] == scanner
             and isinstance(h["target"], dict) and h["target"]["tgid"] == workload]
    assert holds, f"no hold of {workload} by the scanner {scanner}"
    for h in holds:
        assert h["mode"] == "write"  # clear_refs: mmap_lock for write (5.11+)
        assert h["hold_ns"] >= 1_000_000
        assert h["holder"]["comm"] == "ptwalk-scanner"
        assert h["target"]["comm"] == "ptwalk-workload"
    # most of the scanner's walks are seen (a loaded host may lose events)
    assert len(holds) >= max(1, len(run["walks"]) // 2), (len(holds), m["lost_events"])
    waiters = {w["comm"] for h in holds for w in h["waiters"]}
    assert "victim-mmap" in waiters, waiters
    assert "ptwalk-scanner" in stdout


def test_monitor_bad_input() -> None:
    p = run_ptwalk("monitor", "--duration", "0")
    assert p.returncode == 2 and "--duration" in p.stderr
    p = run_ptwalk("monitor", "--min-hold", "soon")
    assert p.returncode == 2 and "--min-hold" in p.stderr
