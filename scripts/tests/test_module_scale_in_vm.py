# SPDX-License-Identifier: GPL-2.0
"""ptwalk.ko at scale (16M PTEs per walk, aliased) in a VM kernel: every walk
recorded once with all its PTE slots, and counters and histograms that add
up rather than wrap. 64 GiB is about the largest TCG walks in half a minute."""
from __future__ import annotations

from typing import Any

import pytest

SIZE_GIB = 64


def _kv(text: str) -> list[dict[str, str]]:
    return [dict(t.split("=", 1) for t in line.split()) for line in text.splitlines() if line]


def test_module_counters_at_scale(vm_config: Any, run_in_vm: Any) -> None:
    from ptwalk_vm.pytest_plugin import matrix_kernel
    k = matrix_kernel(vm_config, "cloud-amd64")
    if k.ko is None:
        pytest.fail(f"ptwalk.ko not built for {k.release} (make module-matrix)")
    r = run_in_vm(k, f"sh scripts/vm/module-scale.sh /ptwalk/module/ptwalk.ko "
                     f"/ptwalk/build/ptwalk {SIZE_GIB}G",
                  files=["scripts/vm/module-scale.sh"], default_files=True, timeout=600.0)
    print(r.stdout[-2500:])
    assert r.returncode == 0 and not r.findings, r.problem()
    import json
    res = json.loads(r.files["scale.json"])
    ptes = SIZE_GIB << 18
    walks = res["walks"]
    assert res["complete"] and len(walks) == 3  # --scans 3: not a function of speed
    kv = res["kernel_view"]
    assert kv["walks_matched"] == len(walks) and kv["module_walks_unmatched"] == 0, kv
    for w in walks:
        assert ptes <= w["pte_slots_visited"] <= ptes + 512 * res["workload"]["size_start"]["vmas"]
        assert w["pte_tables"] >= ptes // 512
        assert 0 < w["kernel_duration_ns"] <= w["syscall_ns"]
    # counters: the sum over the walks recorded, no wrap at 2^32
    recs = [x for x in _kv(r.files["walks.txt"].decode()) if x.get("kind") == "clear_refs"]
    counters = {(c["counter"], c["kind"]): int(c["value"])
                for c in _kv(r.files["counters.txt"].decode())}
    assert counters[("walks", "clear_refs")] == len(recs)
    assert counters[("pte_slots", "clear_refs")] == sum(int(x["pte_slots"]) for x in recs)
    assert counters[("pte_slots", "clear_refs")] >= len(walks) * ptes
    # histograms: one walk_ns sample per walk, in the slot its duration falls in
    hist = [h for h in _kv(r.files["hist.txt"].decode())
            if h["hist"] == "walk_ns" and h["kind"] == "clear_refs"]
    assert sum(int(h["count"]) for h in hist) == len(recs)
    for x in recs:
        # the histogram holds the walk proper (call_ns where it was not timed)
        d = int(x["walk_ns"] if x.get("walk_timed") == "1" else x["call_ns"])
        assert any(int(h["lo"]) <= d <= int(h["hi"]) for h in hist), d
