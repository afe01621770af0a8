# SPDX-License-Identifier: GPL-2.0
"""End-to-end `ptwalk run` on the host kernel: structure and sanity."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ptwalk_cli import known, load_result, meminfo, run_ptwalk, run_result, wait_no_children
from ptwalk_report.result_types import Backend, Backing, Latency, Result, VictimName
from ptwalk_report.result_validation import RunnableCheck
from ptwalk_report.walk_kinds import Profile, WalkKind

GIB = 1 << 30


def check_summary(s: Latency) -> None:
    p50, p99, p999, top = (s.quantile(k) for k in ("p50_ns", "p99_ns", "p999_ns", "max_ns"))
    assert p50 is not None and p99 is not None and p999 is not None and top is not None, s
    assert p50 <= p99 <= p999 <= top
    assert sum(c for _, c in s.buckets) == s.count


@pytest.fixture(scope="module")
def clear_refs_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Result, str]:
    r, p = run_result(tmp_path_factory.mktemp("run"), "--size", "1G", "--backing", "anon",
                      "--scanner", "clear_refs", "--interval", "200ms", "--duration", "4s",
                      "--victims", "read,mmap,fault")
    return r, p.stdout


def test_result_structure(clear_refs_run: tuple[Result, str]) -> None:
    r, _ = clear_refs_run
    # the schema is ptwalk.result/1: load_result() takes no other
    assert r.complete is True
    assert r.backend in (Backend.tracepoint, Backend.syscall)
    assert r.kernel.release
    # the kernel's config options, or why there are none
    assert r.kernel.config or r.kernel.config_note, r.kernel
    assert r.host.cpus is not None and r.host.thp, r.host
    assert r.argv[:2] == ("ptwalk", "run")
    assert r.scenario.backing == Backing.anon
    assert r.scenario.profile == Profile.clear_refs
    assert set(r.victims) == {VictimName.read, VictimName.mmap, VictimName.fault}
    for v in r.victims.values():
        check_summary(v.outside)
        check_summary(v.during)


def test_walks_are_sane(clear_refs_run: tuple[Result, str]) -> None:
    r, _ = clear_refs_run
    walks = r.walks
    # 4 s / 200 ms = 20 intervals; a noisy host may lose a few to long walks
    assert 12 <= len(walks) <= 21, len(walks)
    expect = GIB // 4096
    for w in walks:
        assert w.kind == WalkKind.clear_refs
        assert w.duration_ns > 0
        # the mapping plus the process's own small mappings
        assert expect <= known(w.ptes, w) <= expect * 1.05, w.ptes
        assert known(w.ns_per_pte, w) > 0
    starts = [w.start_ns for w in walks]
    assert starts == sorted(starts)
    assert r.walk_summary[WalkKind.clear_refs].count == len(walks)


def test_mmap_victim_stalls_during_clear_refs(clear_refs_run: tuple[Result, str]) -> None:
    r, _ = clear_refs_run
    mm = r.victims[VictimName.mmap]
    assert mm.during.count > 0
    # clear_refs holds mmap_lock for write for the whole walk: mmap waits
    assert known(mm.during.p999_ns) > known(mm.outside.p999_ns)
    walk_max = max(w.duration_ns for w in r.walks)
    assert known(mm.during.max_ns) <= walk_max * 1.5 + 50_000_000


def test_stall_splits(clear_refs_run: tuple[Result, str]) -> None:
    """Each attributed stall's walker_held + others_held + free is its wait
    (checked by ptwalk itself in validation.stall_parts), and the walker's
    part is no more than the walker held the lock in the walks it spans."""
    r, out = clear_refs_run
    if r.backend != Backend.tracepoint:
        pytest.skip(f"no tracepoint view on this host: {r.backend_detail}")
    kv = known(r.kernel_view)
    stalls = known(kv.stalls)
    parts = known(known(r.validation).stall_parts)
    assert parts.bad == 0, parts
    # clear_refs holds mmap_lock for write over a 1 GiB walk: the mmap and
    # fault victims stall behind it
    assert stalls, "no attributed stall behind clear_refs walks"
    assert parts.checked == len(stalls) > 0, parts
    sched = known(kv.sched_events, kv)
    assert isinstance(sched.available, bool)
    if not sched.available:
        assert sched.why, sched
    slack = 100_000  # ns
    for s in stalls:
        held, others, free = (known(x, s) for x in (s.walker_held_ns, s.others_held_ns,
                                                    s.free_ns))
        assert held + others + free == s.wait_ns, s
        end = s.start_ns + s.wait_ns
        spanned = [w for w in r.walks
                   if w.start_ns < end and s.start_ns < w.start_ns + w.duration_ns]
        bound = max(known(r.walks[known(s.walk, s)].lock_hold_ns, s),
                    sum(w.lock_hold_ns or 0 for w in spanned))
        assert held <= bound + slack, (s, bound)
        if sched.available:
            assert 0 <= known(s.walker_off_cpu_ns, s) <= held, s
        else:
            assert s.walker_off_cpu_ns is None, s
        if sched.waiters:
            assert 0 <= known(s.waiter_runnable_ns, s) <= held - known(s.walker_off_cpu_ns, s), s
        else:
            assert s.waiter_runnable_ns is None, s
    if sched.waiters:
        check_runnable_vs_schedstat(r)
    worst = stalls[0]
    for w in r.walks:
        if w.stalls:
            assert known(w.max_stall_walker_held_ns, w) <= known(w.lock_hold_ns, w) + slack, w
    assert "worst stall " in out and "walk held" in out and " free " in out, out
    assert worst.wait_ns == max(s.wait_ns for s in stalls)


def check_runnable_vs_schedstat(r: Result) -> None:
    """The waiters' runnable parts (from sched_wakeup and sched_switch)
    against the kernel's own account of each victim's runnable time
    (schedstat's run_delay, read by the victim): a victim's stalls do not
    overlap, so their runnable parts add up to no more than it."""
    stalls = known(known(r.kernel_view).stalls)
    checked = 0
    for name, v in r.victims.items():
        mine = [known(s.waiter_runnable_ns, s) for s in stalls if s.victim == name]
        assert isinstance(v.run_delay_ns, int), v  # Debian kernels keep it
        if mine:
            checked += 1
            assert sum(mine) <= v.run_delay_ns + 1_000_000, (name, sum(mine), v.run_delay_ns)
    rv = known(known(r.validation).stall_parts).runnable_vs_schedstat
    if checked:
        assert rv == RunnableCheck(victims=checked, bad=0, tolerance_ns=1_000_000,
                                   bad_victims=()), rv


def test_waiter_runnable_beside_busy_loops(tmp_path: Path) -> None:
    """A writer behind pagemap, which drops and retakes mmap_lock every
    2 MiB, beside two busy loops on this small host: the walker takes the
    lock back while the woken writer waits for a CPU (module/KERNEL-FACTS.md
    entry 20), and the split names that part of the walker's hold
    waiter_runnable_ns; it agrees with the kernel's schedstat, and the
    table says so."""
    import subprocess
    import sys
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        r, _ = run_result(tmp_path, "--size", "512M", "--backing", "anon", "--scanner", "pagemap",
                          "--interval", "50ms", "--duration", "4s", "--victims", "mmap")
    finally:
        for lp in loops:
            lp.kill()
            lp.wait()
    if r.backend != Backend.tracepoint:
        pytest.skip(f"no tracepoint view on this host: {r.backend_detail}")
    kv = known(r.kernel_view)
    sched = known(kv.sched_events, kv)
    assert sched.available and sched.waiters, sched
    stalls = known(kv.stalls)
    assert stalls, "no writer stalled behind pagemap beside two busy loops"
    parts = known(known(r.validation).stall_parts)
    assert parts.bad == 0, parts
    runnable = sum(known(s.waiter_runnable_ns, s) for s in stalls)
    assert runnable > 0, "the woken writer never waited for a CPU beside two busy loops"
    check_runnable_vs_schedstat(r)


def test_table_on_stdout(clear_refs_run: tuple[Result, str]) -> None:
    _, out = clear_refs_run
    assert "clear_refs" in out and "ns/PTE" in out
    for v in ("read", "mmap", "fault"):
        assert f"\n{v} " in out
    assert "backend:" in out


@pytest.mark.parametrize("backing", ["thp", "shmem", "file"])
def test_backings(backing: str, tmp_path: Path) -> None:
    r, _ = run_result(tmp_path, "--size", "256M", "--backing", backing, "--dir", str(tmp_path),
                      "--scanner", "smaps_rollup", "--interval", "200ms", "--duration", "1s",
                      "--victims", "read,write")
    size = known(known(r.workload).size_start)
    if backing == "thp":
        thp = r.host.thp["enabled"] or ""
        if "[never]" in thp:
            pytest.skip("THP disabled on this host: " + thp)
        # most of it should be PMD-mapped: far fewer 4 KiB PTEs than pages
        assert known(size.huge_bytes, size) >= 128 << 20, size
        assert known(size.pmd_entries, size) >= 64
    else:
        assert known(size.ptes, size) >= (256 << 20) // 4096
    assert list(Path(tmp_path).glob("ptwalk-file-*")) == []  # nothing left behind
    assert all(w.kind == WalkKind.smaps_rollup for w in r.walks)


def test_scans_stop_the_scanner(tmp_path: Path) -> None:
    """--scans N: N scans, then the run ends, long before --duration."""
    r, out = run_result(tmp_path, "--size", "64M", "--scanner", "cadvisor",
                        "--interval", "100ms", "--duration", "120s", "--scans", "3",
                        "--victims", "read")
    assert r.complete
    assert r.scenario.max_scans == 3 and r.scenario.planned_walk_intervals == 3
    assert [w.kind for w in r.walks] == [WalkKind.smaps, WalkKind.clear_refs] * 3
    span = int(r.doc["scan_end_ns"]) - int(r.doc["scan_start_ns"])
    assert span < 60e9, span  # stopped by the count, not the duration
    assert "for 120.00 s or 3 scans" in out.stdout, out.stdout


def test_vma_victim_waits_for_the_walk(tmp_path: Path) -> None:
    """The vma victim splits the walked VMA and merges it back: it waits
    for a smaps walk of that VMA on every kernel, on mmap_lock where smaps
    holds it (the tracepoints then explain its waits) and on the VMA's
    lock where smaps walks under per-VMA locks (7.2+: counted apart)."""
    import json
    facts = json.loads(run_ptwalk("locking", "--json", timeout=10).stdout)
    per_vma = facts["kinds"]["smaps"]["lock_unit"] == "vma_lock"
    r, out = run_result(tmp_path, "--size", "256M", "--scanner", "smaps", "--backend",
                        "tracepoint", "--interval", "200ms", "--duration", "3s",
                        "--victims", "vma,read")
    v = r.victims[VictimName.vma]
    assert v.ops > 100, v
    walks = [w.duration_ns for w in r.walks if not w.error]
    assert len(walks) >= 10
    p50 = sorted(walks)[len(walks) // 2]
    worst = known(v.during.quantile("max_ns"))
    assert worst >= 0.3 * p50, (worst, p50)  # it waited for a good part of a walk
    st = known(known(r.validation).stalls)
    assert st.agree, st.disagreements
    if per_vma:
        assert known(st.vma_lock_waits) >= 1, st
    else:  # its waits are on mmap_lock, seen and explained
        assert st.vma_lock_waits is None, st
        assert known(st.recalled) >= 1, st
    # the victim's trial split before the run was undone: the walked
    # mapping was one VMA when its layout was taken
    assert known(known(r.workload).vma_layout).mapping.vmas == 1


PROFILES = {
    "clear_refs": ["clear_refs"], "clear_refs_anon": ["clear_refs_anon"],
    "clear_refs_file": ["clear_refs_file"], "softdirty": ["softdirty"],
    "smaps": ["smaps"], "smaps_rollup": ["smaps_rollup"], "maps": ["maps"],
    "numa_maps": ["numa_maps"], "pagemap": ["pagemap"], "pagemap_scan": ["pagemap_scan"],
    "cadvisor": ["smaps", "clear_refs"], "wss": ["clear_refs", "smaps"],
}


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_scanner_profiles(profile: str, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    p = run_ptwalk("run", "--size", "64M", "--scanner", profile, "--interval", "100ms",
                   "--duration", "700ms", "--victims", "mmap", "--out", str(out))
    if p.returncode == 4:
        assert "skipped" in p.stderr
        pytest.skip(p.stderr.strip())
    assert p.returncode == 0, p.stderr
    r = load_result(out)
    kinds = [w.kind for w in r.walks]
    want = [WalkKind(k) for k in PROFILES[profile]]
    assert kinds, "no walk"
    assert set(kinds) == set(want)
    # walks come in the profile's order
    assert kinds[: len(want)] == want
    for w in r.walks:
        assert w.error is None, w
        if w.kind in (WalkKind.smaps, WalkKind.pagemap, WalkKind.maps, WalkKind.numa_maps,
                      WalkKind.smaps_rollup):
            assert known(w.bytes_read, w) > 0
        if w.kind == WalkKind.pagemap:
            # 8 bytes per page of every VMA: at least the 64 MiB mapping
            assert known(w.bytes_read, w) >= (64 << 20) // 4096 * 8
        if w.kind == WalkKind.pagemap_scan:
            assert known(w.bytes_read, w) >= 64 << 20  # present bytes found
    if profile in ("cadvisor", "wss"):
        refs = [known(w.referenced_bytes, w) for w in r.walks if w.kind == WalkKind.smaps]
        assert refs and max(refs) > 0
    assert wait_no_children() == []


def test_hugetlb_skips_without_reserved_pages(tmp_path: Path) -> None:
    free = meminfo("HugePages_Free")
    if free >= 32:
        pytest.skip(f"{free} huge pages are free here: the skip path cannot be exercised")
    out = tmp_path / "r.json"
    p = run_ptwalk("run", "--size", "64M", "--backing", "hugetlb", "--duration", "1s",
                   "--out", str(out))
    assert p.returncode == 4, p.stderr
    assert "hugetlb: skipped" in p.stderr and "nr_hugepages" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert not out.exists()


@pytest.fixture
def reserved_hugepages() -> Any:
    """Reserves 40 huge pages for the test, restoring the setting on every exit."""
    from ptwalk_cli import is_root
    if not is_root():
        pytest.skip("needs root to reserve huge pages (vm.nr_hugepages)")
    knob = Path("/proc/sys/vm/nr_hugepages")
    before = knob.read_text().strip()
    try:
        knob.write_text(str(int(before) + 40))
        yield
    finally:
        knob.write_text(before)
        assert knob.read_text().strip() == before


def test_hugetlb_backing(reserved_hugepages: Any, tmp_path: Path) -> None:
    free = meminfo("HugePages_Free")
    if free < 32:
        pytest.fail(f"only {free} huge pages free after reserving 40")
    r, _ = run_result(tmp_path, "--size", "64M", "--backing", "hugetlb", "--scanner",
                      "clear_refs", "--interval", "100ms", "--duration", "500ms",
                      "--victims", "read")
    size = known(known(r.workload).size_start)
    assert known(size.huge_bytes, size) >= 64 << 20
    assert known(size.ptes, size) < 4096  # the mapping added no 4 KiB PTEs


def test_perf_summary_in_result(tmp_path: Path) -> None:
    import shutil
    from ptwalk_cli import is_root
    if shutil.which("perf") is None or not is_root():
        pytest.skip("perf (linux-perf) not installed or not root: --perf not exercised")
    out = tmp_path / "r.json"
    p = run_ptwalk("run", "--size", "512M", "--scanner", "clear_refs", "--interval", "200ms",
                   "--duration", "2s", "--victims", "mmap", "--perf", "--quiet",
                   "--out", str(out))
    assert p.returncode == 0, p.stderr
    perf = load_result(out).doc["perf"]   # perf's own shape: not modelled
    assert "error" not in perf, perf
    rec = perf["record"]
    assert rec["samples"] > 0
    # a second view: perf record's own count, "Captured and wrote ... (N samples)"
    import re
    log = (tmp_path / "r.json.perf" / "perf-record.log").read_text()
    m = re.search(r"Captured and wrote .* \((\d+) samples\)", log)
    assert m and int(m.group(1)) == rec["samples"], (log, rec["samples"])
    syms = [s["symbol"] for s in rec["top_kernel_symbols"]]
    assert any("clear_refs" in s or "vm_normal" in s or "pte" in s for s in syms), syms
    assert perf["stat"]["events"]["mmap_lock:mmap_lock_start_locking"] > 0
    assert (tmp_path / "r.json.perf" / "perf.data").exists()
    assert wait_no_children() == []


def test_progress_bar_on_a_tty(tmp_path: Path) -> None:
    """A populate longer than a second shows a progress bar with rate and ETA
    on a terminal, and none when stderr is not one."""
    import shutil
    import subprocess
    if shutil.which("script") is None:
        pytest.skip("script(1) (bsdutils) missing: no pseudo-terminal to test with")
    from ptwalk_cli import PTWALK, tagged_env
    cmd = (f"{PTWALK} run --size 6G --scanner smaps_rollup --interval 500ms "
           f"--duration 500ms --victims none --populate-threads 1 "
           f"--out {tmp_path / 'r.json'}")
    p = subprocess.run(["script", "-qec", cmd, str(tmp_path / "typescript")],
                       capture_output=True, text=True, timeout=300, env=tagged_env())
    assert p.returncode == 0, p.stdout + p.stderr
    assert "populating [" in p.stdout and "/s ETA" in p.stdout and "100%" in p.stdout
    q = run_ptwalk("run", "--size", "6G", "--scanner", "smaps_rollup", "--interval", "500ms",
                   "--duration", "500ms", "--victims", "none", "--populate-threads", "1",
                   "--out", str(tmp_path / "r2.json"), timeout=300)
    assert q.returncode == 0 and "populating" not in q.stderr
