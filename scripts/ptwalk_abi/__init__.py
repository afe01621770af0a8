# SPDX-License-Identifier: GPL-2.0
"""The module's record contract for the Python tools, read from its one
definition, module/ptwalk_abi.h (the module prints from it, the C++ library
and the selftests include it; scripts/tests/test_abi.py checks the readers
against it)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

HEADER = Path(__file__).resolve().parents[2] / "module" / "ptwalk_abi.h"
# the record layouts (PTW_<NAME>_KEYS): walks, stalls, vma_waits, hist, counters, hooks
RECORDS = ("walk", "stall", "vma_wait", "hist", "counter", "hook", "kind_state")


@dataclass(frozen=True)
class Contract:
    debugfs_dir: str
    kinds: tuple[str, ...]
    lock_modes: tuple[str, ...]
    hist_slots: int
    records: dict[str, tuple[tuple[str, str], ...]]  # list -> ((key, conv), ...)
    counters_per_kind: tuple[str, ...]
    counters_all: tuple[str, ...]
    hook_statuses: tuple[str, ...]

    def keys(self, record: str) -> tuple[str, ...]:
        return tuple(k for k, _ in self.records[record])


def _defines(text: str) -> dict[str, str]:
    """#define NAME(...) body, continuation lines joined."""
    text = re.sub(r"\\\n", " ", text)
    return {m.group(1): m.group(2) for m in
            re.finditer(r"^#define\s+(\w+)(?:\([^)]*\))?\s+(.*)$", text, re.M)}


def parse(text: str) -> Contract:
    d = _defines(text)

    def need(name: str) -> str:
        if name not in d:
            raise ValueError(f"{HEADER.name}: no #define {name}")
        return d[name]

    def pairs(name: str) -> tuple[tuple[str, str], ...]:
        got = tuple(re.findall(r'X\((\w+),\s*"([^"]*)"\)', need(name)))
        if not got:
            raise ValueError(f"{HEADER.name}: {name} lists nothing")
        return got

    records = {r: pairs(f"PTW_{r.upper()}_KEYS") for r in RECORDS}
    debugfs_dir = re.fullmatch(r'"([^"]+)"', need("PTW_DEBUGFS_DIR").strip())
    if not debugfs_dir:
        raise ValueError(f"{HEADER.name}: PTW_DEBUGFS_DIR is not one string")
    return Contract(
        debugfs_dir=debugfs_dir.group(1),
        kinds=tuple(re.findall(r'X\(\w+,\s*"([^"]+)"\)', need("PTW_KINDS"))),
        lock_modes=tuple(re.findall(r'X\(\d+,\s*"([^"]+)"\)', need("PTW_LOCK_MODES"))),
        hist_slots=int(need("PTW_HIST_SLOTS").split()[0]),
        records=records,
        counters_per_kind=tuple(re.findall(r"X\((\w+)\)", need("PTW_COUNTERS_PER_KIND"))),
        counters_all=tuple(re.findall(r"X\((\w+)\)", need("PTW_COUNTERS_ALL"))),
        hook_statuses=tuple(re.findall(r'X\("(\w+)"\)', need("PTW_HOOK_STATUSES"))),
    )


@lru_cache(maxsize=1)
def contract() -> Contract:
    return parse(HEADER.read_text(encoding="utf-8"))


def parse_record(line: str) -> list[tuple[str, str]]:
    """One debugfs record line: its (key, value) pairs in order."""
    out = []
    for field in line.split():
        k, sep, v = field.partition("=")
        if not sep:
            raise ValueError(f"not key=value: {field!r} in {line!r}")
        out.append((k, v))
    return out


def check_file(records: tuple[str, ...], text: str) -> list[str]:
    """Problems of a debugfs file's lines against the contract: each line is
    one of `records` (told by its first key), with that record's keys in
    order, and kinds, modes and statuses the contract names."""
    c = contract()
    by_first = {c.keys(r)[0]: r for r in records}
    bad = []
    for n, line in enumerate(text.splitlines(), 1):
        got = parse_record(line)
        rec = by_first.get(got[0][0]) if got else None
        if rec is None:
            bad.append(f"line {n}: not a {'/'.join(records)} record: {line!r}")
            continue
        if tuple(k for k, _ in got) != c.keys(rec):
            bad.append(f"{rec} line {n}: keys {[k for k, _ in got]} != {list(c.keys(rec))}")
            continue
        v = dict(got)
        if "kind" in v and v["kind"] not in c.kinds + ("all",):
            bad.append(f"{rec} line {n}: kind {v['kind']!r} not in {c.kinds}")
        for k in ("lock_mode", "mode", "walker_mode"):
            if k in v and v[k] not in c.lock_modes:
                bad.append(f"{rec} line {n}: {k} {v[k]!r} not in {c.lock_modes}")
        if "status" in v and v["status"] not in c.hook_statuses:
            bad.append(f"{rec} line {n}: status {v['status']!r}")
        if "counter" in v and v["counter"] not in c.counters_per_kind + c.counters_all:
            bad.append(f"{rec} line {n}: counter {v['counter']!r} not in the contract")
        if "slot" in v and not 0 <= int(v["slot"]) < c.hist_slots:
            bad.append(f"{rec} line {n}: slot {v['slot']} of {c.hist_slots}")
    return bad
