# SPDX-License-Identifier: GPL-2.0
"""Incident scale on a small host: alias and zeropage backings, the aliasing
calibration, the memory guard that counts page tables and physical memory."""
from __future__ import annotations

from pathlib import Path

import pytest

from ptwalk_cli import load, run_ptwalk, wait_no_children

MIB = 1 << 20


def test_alias_run_is_labelled_and_calibrated(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    p = run_ptwalk("run", "--size", "1G", "--backing", "alias", "--physical", "64M",
                   "--calibrate-size", "256M", "--scanner", "cadvisor",
                   "--interval", "200ms", "--duration", "1s", "--victims", "mmap",
                   "--out", str(out))
    assert p.returncode == 0, p.stderr
    r = load(out)
    sc = r["scenario"]
    assert sc["backing"] == "alias" and sc["aliased"] is True
    assert sc["physical_bytes"] == 64 * MIB
    assert sc["alias_factor"] == pytest.approx(16)
    size = r["workload"]["size_start"]
    # every alias is mapped with 4 KiB PTEs: 1 GiB of them
    assert (1 << 30) // 4096 <= size["ptes"] <= (1 << 30) // 4096 * 1.05
    assert size["huge_bytes"] == 0
    cal = r["alias_calibration"]
    assert "skipped" not in cal, cal
    assert cal["size_bytes"] == 256 * MIB
    assert cal["aliased_physical_bytes"] == 32 * MIB
    for kind in ("smaps", "clear_refs"):
        assert cal["distinct_ns_per_pte"][kind] > 0
        assert cal["aliased_ns_per_pte"][kind] > 0
        assert cal["ratio"][kind] == pytest.approx(
            cal["distinct_ns_per_pte"][kind] / cal["aliased_ns_per_pte"][kind])
    for w in r["walks"]:
        assert w["ns_per_pte_corrected"] == pytest.approx(
            w["ns_per_pte"] * cal["ratio"][w["kind"]])
    # the table never shows an aliased figure as a distinct-page one
    assert "ALIASED" in p.stdout and "corr." in p.stdout
    assert wait_no_children() == []


def test_alias_without_calibration_says_so(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    p = run_ptwalk("run", "--size", "256M", "--backing", "alias", "--physical", "16M",
                   "--calibrate-size", "0", "--scanner", "clear_refs", "--interval", "100ms",
                   "--duration", "500ms", "--victims", "none", "--out", str(out))
    assert p.returncode == 0, p.stderr
    r = load(out)
    assert "uncorrected" in r["alias_calibration"]["skipped"]
    assert all("ns_per_pte_corrected" not in w for w in r["walks"])
    assert "uncorrected" in p.stdout


def test_zeropage_counts_ptes_from_page_tables(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    p = run_ptwalk("run", "--size", "512M", "--backing", "zeropage", "--scanner", "clear_refs",
                   "--interval", "100ms", "--duration", "500ms", "--victims", "read",
                   "--out", str(out))
    assert p.returncode == 0, p.stderr
    r = load(out)
    assert "lower_bound" in r["scenario"]
    assert "zero-page" in r["workload"]["ptes_source"]
    # zero-page PTEs are not in Rss
    assert r["workload"]["size_start"]["rss_bytes"] < 64 * MIB
    n = (512 * MIB) // 4096
    for w in r["walks"]:
        assert n <= w["ptes"] <= n * 1.1
    assert "ZERO PAGE" in p.stdout


@pytest.mark.parametrize("args,ok", [
    (["--size", "1T", "--backing", "alias"], True),            # 1 GiB + 2 GiB of tables
    (["--size", "100G", "--backing", "zeropage"], True),       # 200 MiB of tables
    (["--size", "32G", "--backing", "anon"], False),           # distinct pages: too big
    (["--size", "1T", "--backing", "alias", "--physical", "64G"], False),
])
def test_memory_guard_counts_tables_and_physical(args: list[str], ok: bool) -> None:
    total = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            total = int(line.split()[1]) * 1024
    if not 8 << 30 <= total <= 30 << 30:
        pytest.skip(f"cases are sized for a host with 8-30 GiB available ({total >> 30} GiB)")
    p = run_ptwalk("run", *args, "--dry-run")
    if ok:
        assert p.returncode == 0, p.stderr
        assert p.stdout.startswith("plan: ")
    else:
        assert p.returncode == 2
        assert "page tables" in p.stderr and "available" in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1
