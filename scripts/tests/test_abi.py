# SPDX-License-Identifier: GPL-2.0
"""module/ptwalk_abi.h is the one definition of what ptwalk.ko prints in
debugfs; every reader takes it from there. These checks fail when a reader
or the module goes back to a copy of its own (the C++ reader is checked key
by key in userspace/tests/backends/test_module_view.cpp, the module's live output in
test_module_in_vm.py)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import ptwalk_abi

REPO = Path(__file__).resolve().parents[2]


def test_contract_parses() -> None:
    c = ptwalk_abi.contract()
    assert c.debugfs_dir == "ptwalk"
    assert c.kinds == ("clear_refs", "smaps", "smaps_rollup", "pagemap", "pagemap_scan")
    assert c.lock_modes == ("none", "read", "write", "mixed")
    assert c.hist_slots == 64
    for rec in ("walk", "stall", "vma_wait", "hist", "counter", "hook", "kind_state"):
        keys = c.keys(rec)
        assert keys and len(set(keys)) == len(keys), (rec, keys)
    assert c.keys("walk")[:2] == ("seq", "kind")


def test_a_broken_header_is_refused() -> None:
    text = ptwalk_abi.HEADER.read_text()
    with pytest.raises(ValueError, match="PTW_WALK_KEYS"):
        ptwalk_abi.parse(text.replace("#define PTW_WALK_KEYS", "#define PTW_WALK_KEYZ"))


def test_the_module_prints_records_only_from_the_contract() -> None:
    # no hand-written "key=%..." seq_file format left in the module
    for f in sorted((REPO / "module").glob("*.c")):
        hand = re.findall(r'seq_printf\(m,\s*("[^"]*\b[a-z_]+=%[^"]*")', f.read_text())
        assert not hand, f"{f.name}: record formats outside ptwalk_abi.h: {hand}"
    trace = (REPO / "module" / "ptwalk_trace.h").read_text()
    assert not re.search(r'\{\s*\d+\s*,\s*"', trace), \
        "ptwalk_trace.h names kinds or modes by number instead of PTW_KINDS/PTW_LOCK_MODES"


def test_the_selftests_read_keys_by_the_contract() -> None:
    for f in sorted((REPO / "selftests").glob("*.c")):
        lit = re.findall(r'ptw_kv_get\([^,]+,\s*"(\w+)"', f.read_text())
        assert not lit, f"{f.name}: keys as literals: {lit}"
        used = re.findall(r"PTW_WALK_KEY\((\w+)\)", f.read_text())
        assert set(used) <= set(ptwalk_abi.contract().keys("walk")), used


def test_the_cpp_reader_reads_keys_by_the_contract() -> None:
    src = (REPO / "userspace" / "backends" / "src" / "module_view.cpp").read_text()
    lit = re.findall(r'(?:(?:u64|i32|s)\(\w+, |\.count\()"(\w+)"\)', src)
    # duration_ns: the key's name before the walk-proper split (old modules)
    assert set(lit) <= {"duration_ns"}, lit


def test_check_file_finds_drift() -> None:
    c = ptwalk_abi.contract()
    good = " ".join(f"{k}={'clear_refs' if k == 'kind' else 'read' if 'mode' in k else '1'}"
                    for k in c.keys("walk"))
    assert ptwalk_abi.check_file(("walk",), good + "\n") == []
    swapped = good.replace("seq=1 kind=clear_refs", "kind=clear_refs seq=1")
    assert ptwalk_abi.check_file(("walk",), swapped)
    assert ptwalk_abi.check_file(("walk",), good.replace("kind=clear_refs", "kind=maps"))
    assert ptwalk_abi.check_file(("walk",), good.replace(" probe_missed=1", ""))
