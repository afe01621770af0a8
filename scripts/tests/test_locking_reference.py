# SPDX-License-Identifier: GPL-2.0
"""The per-kernel locking table against the measured reference set
(results/reference/locking/: Debian 6.19.14, 7.0.13 and 7.1.13 cloud, the
tracepoint backend): for each recorded kind, what the walks themselves
held of mmap_lock must be what `ptwalk locking --release` says of that
release, and no measured release may be `unread`."""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from ptwalk_cli import run_ptwalk

REF = Path(__file__).resolve().parents[2] / "results" / "reference" / "locking"
RESULTS = sorted(REF.glob("*/*.json"))


def held_share(doc: dict[str, Any]) -> tuple[float, set[str]]:
    """The median share of a walk that held mmap_lock (a walk that took
    none: 0), and the modes the walks held it in."""
    walks = [w for w in doc["walks"] if not w.get("error") and not w.get("incomplete")]
    assert len(walks) >= 10, len(walks)
    shares = [(w.get("lock_hold_ns") or 0) / w["duration_ns"] for w in walks]
    return statistics.median(shares), {w["lock_mode"] for w in walks if w.get("lock_mode")}


def test_the_set_is_whole() -> None:
    assert {p.parent.name for p in RESULTS} == {"6.19.14", "7.0.13", "7.1.13"}
    assert {p.stem for p in RESULTS} == {"smaps", "numa_maps", "maps", "smaps_rollup"}
    assert len(RESULTS) == 12


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_the_table_is_what_the_walks_held(path: Path) -> None:
    doc = json.loads(path.read_text())
    kind, release = path.stem, doc["kernel"]["release"]
    assert release.startswith(path.parent.name + "+"), release
    assert doc["backend"] == "tracepoint"
    p = run_ptwalk("locking", "--release", release, "--json", timeout=10)
    assert p.returncode == 0, p.stderr
    fact = json.loads(p.stdout)["kinds"][kind]
    assert fact["basis"] != "unread", (release, kind, fact)
    share, modes = held_share(doc)
    if fact["lock_unit"] == "vma_lock":
        # per-VMA locks: the median walk holds mmap_lock under 1% of it
        assert share < 0.01, (release, kind, share)
    else:
        assert modes == {fact["lock_mode"]} and share > 0.5, (release, kind, share, modes)
    # and the run's own check, made by the same code, agrees
    loc = doc["stall_estimate"]["kinds"][kind]["locking"]
    assert loc["agrees"] is True, loc["why"]
