# SPDX-License-Identifier: GPL-2.0
"""The monitor's bpf backend (the mmap_lock tracepoints paired in the kernel)
checked against the tracepoint backend (every event through perf, paired in
userspace): both watch the same walks at the same time and must report the
same holds, with the same targets and waiters. And when BPF is unavailable,
`auto` says so and falls back; `--backend bpf` exits 4."""
from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from monitor_util import kill, require_root, run_walker, start_target, unique_comm
from ptwalk_cli import PTWALK, load, run_ptwalk, tagged_env

# Both views timestamp the same tracepoint call with CLOCK_MONOTONIC
# (bpf_ktime_get_ns, perf's clock): they differ by the few microseconds
# between the two probes, far below this.
TOL_NS = 200_000


def _monitor(tmp: Path, backend: str) -> subprocess.Popen[str]:
    return subprocess.Popen([str(PTWALK), "monitor", "--backend", backend, "--duration", "120s",
                             "--quiet", "--out", str(tmp / f"{backend}.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=tagged_env())


def _finish(p: subprocess.Popen[str], tmp: Path, backend: str) -> dict[str, Any]:
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    return load(tmp / f"{backend}.json")


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (a["holder"]["pid"] == b["holder"]["pid"]
            and abs(a["start_ns"] - b["start_ns"]) < TOL_NS
            and abs(a["hold_ns"] - b["hold_ns"]) < TOL_NS)


def _compare(name: str, mine: dict[str, Any], other: dict[str, Any], lo: float,
             hi: float) -> int:
    """Every hold of `mine` well inside both windows and clear of the
    threshold is in `other`, with the same mode, target and waiters."""
    checked = 0
    thr = mine["min_hold_ns"]
    for h in mine["holds"]:
        if not (lo <= h["start_ns"] and h["start_ns"] + h["hold_ns"] <= hi
                and h["hold_ns"] >= thr + TOL_NS):
            continue
        match = [x for x in other["holds"] if _same(h, x)]
        if not match:
            # only events the other view counted as lost may hide a hold
            assert other["lost_events"] > 0, (name, "missing", h)
            continue
        x = match[0]
        checked += 1
        assert x["mode"] == h["mode"], (name, h, x)
        t, u = h["target"]["tgid"], x["target"]["tgid"]
        # known in both: the same process (one view may know more: the
        # kernel's mm->owner names what no probe saw)
        assert not (t and u) or t == u, (name, h, x)
        assert x["waiters_total"] == h["waiters_total"], (name, h, x)
        if h["waiters"]:
            assert abs(x["waiters"][0]["wait_ns"] - h["waiters"][0]["wait_ns"]) < TOL_NS, \
                (name, h, x)
    return checked


def test_bpf_and_tracepoint_report_the_same_walks(tmp_path: Path) -> None:
    require_root()
    tcomm, wcomm = unique_comm("pwt-idle"), unique_comm("pwt-wss")
    target, tpid = start_target(tcomm, 256, 8)
    try:
        bpf = _monitor(tmp_path, "bpf")
        tp = _monitor(tmp_path, "tracepoint")
        time.sleep(3)
        # a clear_refs scanner with victims waiting behind it, and a
        # wss-style smaps reader of an idle target
        r = run_ptwalk("run", "--size", "512M", "--scanner", "clear_refs", "--interval",
                       "200ms", "--duration", "3s", "--victims", "mmap,fault",
                       "--backend", "syscall", "--quiet", "--out", str(tmp_path / "r.json"))
        assert r.returncode == 0, r.stderr
        run_walker(wcomm, tpid, "smaps", 0.5, 4)
        time.sleep(1)
        mb = _finish(bpf, tmp_path, "bpf")
        mt = _finish(tp, tmp_path, "tracepoint")
    finally:
        kill(target)
    assert mb["backend"] == "bpf" and mt["backend"] == "tracepoint"
    # the program pairs in the kernel and hands on a small part
    k = mb["bpf"]
    assert k["events"] > 10_000, k
    assert k["records"] * 20 < k["events"], k
    assert k["dropped"] == 0 and k["misses"] == 0, k
    # a BPF program on these tracepoints does not hide them from perf: both
    # counted the same tracepoint calls over nearly the same window
    assert 0.8 < mb["events"] / mt["events"] < 1.25, (mb["events"], mt["events"])
    lo = max(mb["start_ns"], mt["start_ns"]) + 500_000_000
    hi = min(mb["start_ns"] + mb["duration_ns"], mt["start_ns"] + mt["duration_ns"]) - 500_000_000
    n1 = _compare("tracepoint->bpf", mt, mb, lo, hi)
    n2 = _compare("bpf->tracepoint", mb, mt, lo, hi)
    # the scanner's walks (15) and the smaps reads (4) at least
    assert min(n1, n2) >= 15, (n1, n2)
    run = load(tmp_path / "r.json")
    scanner = run["walks"][0]["walker_pid"]
    walks = [h for h in mb["holds"] if h["holder"]["tgid"] == scanner and h["mode"] == "write"
             and h["target"]["tgid"] == run["workload"]["pid"]]
    assert walks and all(h["target"]["basis"] == "mm_owner" for h in walks), walks
    assert any(h["waiters_total"] for h in walks), walks


def _without_bpf(*args: str) -> subprocess.CompletedProcess[str]:
    """The monitor as root without CAP_BPF and CAP_SYS_ADMIN (perf events
    still allowed through CAP_PERFMON), tracefs mounted for it beforehand
    in a private mount namespace."""
    return subprocess.run(
        ["unshare", "-m", "sh", "-c",
         'mount -t tracefs nodev /sys/kernel/tracing && exec setpriv '
         '--inh-caps=-sys_admin,-bpf --bounding-set=-sys_admin,-bpf "$@"', "sh",
         str(PTWALK), "monitor", *args],
        capture_output=True, text=True, timeout=120, env=tagged_env())


def test_auto_falls_back_to_tracepoint_when_bpf_is_refused(tmp_path: Path) -> None:
    require_root()
    out = tmp_path / "m.json"
    r = _without_bpf("--duration", "2s", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "BPF unavailable" in r.stderr and "through perf" in r.stderr, r.stderr
    m = load(out)
    assert m["backend"] == "tracepoint"
    assert "Operation not permitted" in m["bpf_unavailable"], m["bpf_unavailable"]
    assert "bpf" not in m
    # asked for by name, it is unsupported here: one line, exit 4
    r = _without_bpf("--backend", "bpf", "--duration", "2s", "--out", str(tmp_path / "b.json"))
    assert r.returncode == 4, (r.returncode, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("ptwalk monitor: bpf backend unavailable"), lines
    assert not (tmp_path / "b.json").exists()
