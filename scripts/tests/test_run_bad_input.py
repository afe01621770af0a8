# SPDX-License-Identifier: GPL-2.0
"""Bad input: a one-line error naming the problem, exit 2, nothing written,
no child left behind. Signals: children stopped, partial result written."""
from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from ptwalk_cli import PTWALK, is_root, load, run_ptwalk, tagged_env, wait_no_children

BASE = ["run", "--duration", "1s", "--interval", "100ms", "--size", "16M"]

CASES = {
    "size zero": (["--size", "0"], "--size"),
    "size bad suffix": (["--size", "12Q"], "suffix"),
    "size too big": (["--size", "64T"], "MemAvailable"),
    "unknown scanner": (["--scanner", "clearrefs"], "unknown --scanner"),
    "unknown backing": (["--backing", "nvme"], "unknown --backing"),
    "unknown fault region": (["--fault-region", "middle"], "unknown --fault-region"),
    "unknown victim": (["--victims", "read,sleep"], "unknown victim"),
    "duplicate victim": (["--victims", "read,read"], "twice"),
    "zero interval": (["--interval", "0"], "--interval"),
    "negative interval": (["--interval", "-1s"], "negative"),
    "zero duration": (["--duration", "0s"], "--duration"),
    "bad duration unit": (["--duration", "3 weeks"], "--duration"),
    "zero scans": (["--scans", "0"], "--scans"),
    "scans not a number": (["--scans", "3x"], "--scans"),
    "scans too many": (["--scans", "99999999999999999999"], "--scans"),
    "unwritable out": (["--out", "/nonexistent-dir/r.json"], "--out"),
    "unknown backend": (["--backend", "ebpf"], "--backend"),
    "unknown option": (["--sise", "1G"], "unknown option"),
    "missing value": (["--size"], "needs a value"),
    "dir missing": (["--backing", "file", "--dir", "/nonexistent-dir"], "--dir"),
    "dir is a file": (["--backing", "file", "--dir", "/etc/hostname"], "not a directory"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input(case: str, tmp_path: Path) -> None:
    extra, needle = CASES[case]
    out = tmp_path / "r.json"
    args = BASE + extra
    if "--out" not in extra:
        args += ["--out", str(out)]
    p = run_ptwalk(*args, timeout=30)
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert needle in lines[0], lines[0]
    assert lines[0].startswith("ptwalk run: ")
    assert p.stdout == ""
    assert list(tmp_path.iterdir()) == []  # nothing half-written
    assert wait_no_children(1) == []


def test_dir_without_space(tmp_path: Path) -> None:
    if not is_root():
        pytest.skip("needs root to mount a small tmpfs")
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "none", str(mnt)])
    if r.returncode != 0:
        pytest.skip("cannot mount tmpfs here")
    try:
        p = run_ptwalk(*BASE, "--backing", "file", "--dir", str(mnt), timeout=30)
        assert p.returncode == 2, p.stderr
        assert "free" in p.stderr and str(mnt) in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1
        assert list(mnt.iterdir()) == []
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_unknown_command() -> None:
    p = run_ptwalk("frobnicate")
    assert p.returncode == 2
    assert "unknown command" in p.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_writes_partial_result(sig: signal.Signals, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = subprocess.Popen([str(PTWALK), "run", "--size", "256M", "--scanner", "clear_refs",
                             "--interval", "100ms", "--duration", "60s",
                             "--victims", "mmap", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=tagged_env())
    # let it populate and walk a few times
    deadline = time.monotonic() + 30
    time.sleep(2.5)
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=max(1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("ptwalk did not stop after " + sig.name)
    assert proc.returncode == 128 + sig.value, err
    assert "interrupted" in err
    r = load(out)
    assert r["complete"] is False
    assert r["interrupted"]
    assert len(r["walks"]) >= 1
    assert r["victims"]["mmap"]["outside"]["count"] > 0
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary
    assert wait_no_children() == []
