# SPDX-License-Identifier: GPL-2.0
"""`ptwalk run --scanner damon` in Debian's kernels that have DAMON vaddr
and its sysfs: 6.12 cloud, and 7.3 cloud with damon_stat, which Debian
turns on there and which excludes every other kdamond, turned off first in
the guest (the test's own; ptwalk never does that itself).

One boot each runs the known working set (a hot quarter of 64 MiB) under
DAMON and judges its estimate against the toucher's truth, then kills a
second run's scanner mid-run: the kdamond it turned on must be gone after
either, as every exit path restores what it changed. The views:
- DAMON's regions (the estimate) against the toucher's positions (the
  truth), per aggregation, with the windows' alignment checked;
- the kdamond's CPU time (its schedstat) as the method's cost, and its
  thread's pid as DAMON's sysfs names it;
- the victims' own clocks beside it, unchanged in kind: no walk of the
  scanner's, so none of their operations is during one."""
from __future__ import annotations

import json
from typing import Any

import pytest

from ptwalk_vm import config
from ptwalk_vm.pytest_plugin import BOOT_SLOTS, skip_or_fail, vm_unavailable

pytestmark = pytest.mark.vm

NR = "/sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds"
RUN = ("/ptwalk/build/ptwalk run --scanner damon --working-set 0.25,hot --size 64M "
       "--backing anon --populate-threads 1 --interval 200ms --duration {d} "
       "--out /results/{n}.json > /results/{n}.txt 2>&1; echo \"damon: {n} exit $?\"; "
       f"echo \"damon: {{n}} nr_kdamonds $(cat {NR})\"")
CMD = ("mkdir -p /results; "
       "f=/sys/module/damon_stat/parameters/enabled; [ -e $f ] && echo N > $f; "
       + RUN.format(n="hot", d="4s") + "; "
       + "(" + RUN.format(n="killed", d="30s") + ") & "
       "sleep 4; killall -KILL ptwalk-scanner; wait")


@pytest.fixture(scope="module", params=["6.12", "7.3"])
def damon_run(request: pytest.FixtureRequest, vm_config: Any,
              tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from ptwalk_vm import vm as pipeline
    series = request.param
    ks, missing = vm_config.matrices([f"debian-{series}"])
    k = next((k for k in ks if k.name == "cloud-amd64"), None)
    if k is None:
        skip_or_fail(f"Debian {series} cloud kernel not installed: " + "; ".join(missing))
    assert k is not None
    reason = vm_unavailable(vm_config, k)
    if reason:
        skip_or_fail(reason)
    opts = pipeline.RunOptions(add=[(config.PROJECT / "build/ptwalk", "/ptwalk/build/ptwalk")],
                               timeout=300.0, default_files=False)
    with BOOT_SLOTS:
        r = pipeline.run_in_vm(vm_config, k, CMD, opts, tmp_path_factory.mktemp(f"damon{series}"))
    print(r.stdout[-2000:])
    assert r.returncode == 0 and not r.findings, r.problem()
    return {"stdout": r.stdout, "series": series} | {
        n: r.files.get(n, b"").decode() for n in ("hot.txt", "killed.txt")} | {
        n: json.loads(r.files[n]) for n in ("hot.json",) if n in r.files}


def test_damon_estimate_against_the_truth(damon_run: dict[str, Any]) -> None:
    out = damon_run["stdout"]
    assert "damon: hot exit 0" in out, (out, damon_run["hot.txt"][-3000:])
    doc = damon_run["hot.json"]
    ws = doc["working_set"]
    assert ws["method"] == "damon_vaddr", ws
    d = ws["damon"]
    assert (d["sample_us"], d["aggr_us"]) == (5000, 200000), d
    # each read caught the aggregation after the one before: almost no
    # window is given up (a late scanner may miss one), 4 s of 200 ms
    assert d["reads"] >= 12 and d["windows_skipped"] <= 2, d
    assert ws["accuracy"]["windows"] == len(ws["windows"]) >= 10, ws["accuracy"]
    mapping = ws["pages"] * ws["page_bytes"]
    span = 2 * (d["aggr_us"] + d["return_slack_us"]) * 1000 + 100_000_000
    for w in ws["windows"]:
        # an aggregation, from the earliest it began to the read's return
        assert 0 < w["end_ns"] - w["start_ns"] < span, w
        assert w["truth_lo_bytes"] <= w["truth_hi_bytes"] <= ws["per_round"] * ws["page_bytes"]
        # DAMON counts whole regions of the mapping, never past it
        assert 0 <= w["estimate_bytes"] <= mapping, w
    # the toucher's timeline gives the low end: most windows have one
    # (back to back, the reads' own counts leave it empty)
    assert sum(w["truth_lo_bytes"] > 0 for w in ws["windows"]) >= len(ws["windows"]) // 2, \
        [(w["truth_lo_bytes"], w["truth_hi_bytes"]) for w in ws["windows"]]
    # its cost is the kdamond's CPU, which ran: some time in every window
    assert d["kdamond_pid"] > 0 and d["kdamond_cpu_ns"] > 0, d
    assert ws["cost"]["walk_ns_p50"] > 0 and 0 < ws["cost"]["core_share"] < 1, ws["cost"]
    assert sum(w["walk_ns"] for w in ws["windows"]) <= d["kdamond_cpu_ns"], d
    # no walk of the scanner's: the victims' operations are all outside
    assert doc["walks"] == []
    assert all(v["ops"] == v["outside"]["count"] for v in doc["victims"].values()), \
        {k: v["ops"] for k, v in doc["victims"].items()}
    assert "damon_vaddr:" in damon_run["hot.txt"] and "kdamond's CPU" in damon_run["hot.txt"]
    assert "damon: hot nr_kdamonds 0" in out, out


def test_a_killed_scanner_leaves_no_kdamond(damon_run: dict[str, Any]) -> None:
    out = damon_run["stdout"]
    # the run fails (its scanner died) and removes the kdamond the scanner
    # turned on and could not stop
    assert "damon: killed exit 1" in out, (out, damon_run["killed.txt"][-3000:])
    assert "damon: killed nr_kdamonds 0" in out, out
