# SPDX-License-Identifier: GPL-2.0
"""ptwalk.ko acceptance inside each Debian kernel build of the matrix:
scripts/vm/module-acceptance.sh runs in the boot each kernel's suites share
(ptwalk_vm/suites.py), the assertions are here."""
from __future__ import annotations

import json
import os
import statistics
from pathlib import Path
from typing import Any

import ptwalk_abi
from ptwalk_cli import known, parse_result
from ptwalk_report.result_types import (Accel, Backend, GuestClock, GuestVm, Result,
                                        VictimName)
from ptwalk_report.walk_kinds import WalkKind
from ptwalk_vm.pytest_plugin import KernelSuites, require_module
from ptwalk_vm.suites import ACCEPTANCE_INJECT_NS as INJECT_NS
from ptwalk_vm.suites import ACCEPTANCE_INJECT_NS_RT as INJECT_NS_RT
from test_crossvalidation import check_module_split

SIZE = 256 << 20


def _load(files: dict[str, bytes], name: str) -> dict[str, Any]:
    """A JSON file the guest returned that is not a ptwalk result (monitor)."""
    assert name in files, f"{name} not returned by the guest (got {sorted(files)})"
    return json.loads(files[name])


def _result(files: dict[str, bytes], name: str) -> Result:
    assert name in files, f"{name} not returned by the guest (got {sorted(files)})"
    return parse_result(name, files[name])


def test_module_acceptance(vm_kernel: Any, kernel_suites: KernelSuites) -> None:
    require_module(vm_kernel)
    r = kernel_suites(vm_kernel).suite("acceptance")
    print(r.stdout[-6000:])
    keep = os.environ.get("PTWALK_VM_ARTIFACTS")
    if keep:  # to chase a failure: the guest's files, kept past pytest's tmp rotation
        out = Path(keep) / (vm_kernel.name if vm_kernel is not None else "default")
        out.mkdir(parents=True, exist_ok=True)
        for name, data in r.files.items():
            (out / name).write_bytes(data)
        (out / "stdout.txt").write_text(r.stdout)
    assert not r.timed_out, f"{r.problem()}\nconsole tail:\n{r.console[-4000:]}"
    assert not r.findings, f"kernel log problems: {r.findings}"
    assert r.returncode == 0, f"acceptance script failed:\n{r.stdout[-3000:]}\n{r.stderr[-2000:]}"
    f = r.files

    # what the module printed follows module/ptwalk_abi.h, line by line
    for name, records in (("walks", ("walk",)), ("stalls", ("stall",)), ("hist", ("hist",)),
                          ("counters", ("counter",)), ("hooks", ("hook", "kind_state"))):
        text = f[f"debugfs-{name}.txt"].decode()
        assert text.strip(), f"debugfs {name} is empty"
        bad = ptwalk_abi.check_file(records, text)
        assert not bad, "\n".join(bad[:10])
    hooks = {dict(ptwalk_abi.parse_record(line)).get("hook"): dict(ptwalk_abi.parse_record(line))
             for line in f["hooks.txt"].decode().splitlines()}
    for sym in ("clear_refs_write", "show_smaps_rollup", "pagemap_read"):
        assert hooks.get(sym, {}).get("status") == "attached", hooks.get(sym)

    for name in ("clear_refs", "smaps_rollup", "pagemap", "smaps"):
        res = _result(f, f"{name}.json")
        assert res.backend == Backend.module, res.backend_detail
        kv = known(res.kernel_view)
        walks = res.walks
        assert walks, name
        # every walk the scanner made appears exactly once in the module's record
        assert kv.walks_matched == kv.walks_hookable == len(walks), (name, kv)
        assert kv.module_walks_unmatched == 0, (name, kv)
        assert kv.nmissed == 0, (name, res.doc["kernel_view"]["hooks"])
        # no failed attempt is a stall; a split stall's parts sum to its wait
        bad, _ = check_module_split(name, res)
        assert not bad, "\n".join(bad)
        size = known(known(res.workload).size_start)
        for w in walks:
            if name == "smaps_rollup":
                assert w.rollup_rss_bytes is not None, w
            if w.incomplete is not None:
                # 6.1 skips the VMA it finds after yielding mmap_lock: the
                # walk's own Rss says so, and the module must agree (the
                # lock taken more than once, short of its complete walk:
                # validation["walks"], checked below)
                assert name == "smaps_rollup", (name, w)
                assert known(w.lock_acquisitions, w) > 1, w
                continue
            # PTE slots visited cover the mapping, at most one table per VMA more
            slots = known(w.pte_slots_visited, w)
            assert SIZE // 4096 <= slots <= SIZE // 4096 + 512 * known(size.vmas, size), \
                (name, slots, size)
            # kernel-side duration <= syscall duration, within 20% of it
            # (kernel_call_ns: the writer's kernel_duration_ns, by its newer name)
            assert known(w.syscall_ns, w) <= w.duration_ns
            assert known(w.kernel_call_ns, w) <= known(w.syscall_ns, w), (name, w)
        val = known(known(res.validation).walks)
        assert val.short_unconfirmed == 0 and val.agree, (name, val)
        if name == "smaps_rollup":
            # the module's complete walk: ptwalk's own rollup of the stopped
            # workload covers the mapping
            assert known(val.complete_walk_pte_slots, val) >= SIZE // 4096, val
        assert val.short_after_yielding_lock == sum(w.incomplete is not None for w in walks)
        assert res.walk_summary[WalkKind(name)].incomplete == val.short_after_yielding_lock
        full = [w for w in walks if w.incomplete is None]
        if name in ("clear_refs", "smaps_rollup"):
            # within 20%, walk by walk, on the median of the ratios: a
            # single walk's syscall time also holds a preemption of the
            # scanner (e.g. when the waiter it released is woken), one tick
            # on a busy 2-CPU guest. Paired, as the two views are of the
            # same walk: the medians of the two columns apart compare
            # different walks when durations spread 4-21 ms (TCG)
            ratios = sorted(known(w.kernel_call_ns, w) / known(w.syscall_ns, w) for w in full)
            assert statistics.median(ratios) >= 0.8, (name, [round(x, 2) for x in ratios])

    # 6.1 skips the VMA smaps_rollup finds after yielding mmap_lock: over 64
    # VMAs with a writer waiting, some walks skip, each one seen by both
    # views (the walk's own Rss and the module's PTE slots). 6.12 has the
    # fix (6d065f507d82): walks yield and none may skip.
    ra = _result(f, "rollup_alias.json")
    yielded = [w for w in ra.walks if known(w.lock_acquisitions, w) > 1]
    skipped = [w for w in ra.walks if w.incomplete is not None]
    assert yielded, "no smaps_rollup walk yielded mmap_lock: the writer never waited"
    bugs = vm_kernel.known_bugs if vm_kernel is not None else None
    if bugs is not None and "smaps_rollup_skip" in bugs:
        assert skipped, f"{len(yielded)} walks yielded the lock and none skipped a VMA"
    elif bugs is not None:
        assert not skipped, (f"{len(skipped)} of {len(yielded)} walks that yielded the lock "
                             f"skipped a VMA on {vm_kernel.release}, which has the fix")
    val = known(known(ra.validation).walks)
    assert known(val.complete_walk_pte_slots, val) >= SIZE // 4096, val
    assert val.short_after_yielding_lock == len(skipped), val
    assert val.short_unconfirmed == 0 and val.agree, val
    assert ra.walk_summary[WalkKind.smaps_rollup].incomplete == len(skipped)
    assert ("walks skipped VMAs after yielding mmap_lock" in f["rollup_alias.txt"].decode()) \
        == bool(skipped)

    # mmap victims' stalls are attributed to the clear_refs walks that caused them
    cr = _result(f, "clear_refs.json")
    # the result says how it was clocked: this guest's accelerator, clock, CPU, QEMU
    assert cr.host.vm == GuestVm(Accel(r.accel), GuestClock(r.clock), r.cpu,
                                 r.qemu_version.split()[0]), cr.host
    crv = known(cr.kernel_view)
    mm = crv.thread("mmap")
    assert mm and known(mm.attributed, mm) > 0, crv.threads
    for s in cr.stalls:
        assert cr.walks[known(s.walk, s)].kind == WalkKind.clear_refs
        assert s.victim == VictimName.mmap, s   # no other waiter stalled
    assert sum(known(w.stalls, w) for w in cr.walks) >= known(mm.attributed)

    # fault injection raises the walk cost by the delay per PTE table. The
    # delay is a ktime busy-wait, exact in guest time; what overruns under
    # TCG is the rest of the walk, which doubles while another guest holds
    # the host's CPUs (6.12 base walks of one 3 s run: 9-22 ms). One base
    # run then one injected run of 100 us per table measured x0.77 on the
    # medians in a CI run: the other guest slowed the base run alone. Now
    # the runs alternate (base1 inject1 base2 inject2); the delay (500 us,
    # 100 us on PREEMPT_RT, which caps it) is 11x the rest per table where
    # the kernel allows it; and the sets compare by their fastest walk, as
    # the host's load only adds time (the same CI run's sets: x1.04 on
    # their fastest walks). KVM keeps the tight bound; under TCG the upper
    # bound catches a runaway, not 2x.
    rt = "-rt-" in vm_kernel.release if vm_kernel is not None else None
    delay = int(f["inject_ns"].decode())
    if rt is not None:
        assert delay == (INJECT_NS_RT if rt else INJECT_NS), (vm_kernel.release, delay)
    base = [_result(f, f"base{k}.json") for k in (1, 2)]
    inj = [_result(f, f"inject{k}.json") for k in (1, 2)]
    for res, want in [(x, 0) for x in base] + [(x, delay) for x in inj]:
        # the module says what it injected while each run walked
        assert known(res.kernel_view).counter("inject_delay_ns.all") == want, want
    bw = [w for x in base for w in x.walks]
    iw = [w for x in inj for w in x.walks]
    assert len(bw) >= 6 and len(iw) >= 6, (len(bw), len(iw))
    b = min(known(w.kernel_call_ns, w) for w in bw)
    i = min(known(w.kernel_call_ns, w) for w in iw)
    tables = statistics.median(known(w.pte_tables, w) for w in iw)
    expect = tables * delay
    upper = 3.0 if r.accel == "tcg" else 1.3
    ratio = (i - b) / expect
    med = (statistics.median(known(w.kernel_call_ns, w) for w in iw)
           - statistics.median(known(w.kernel_call_ns, w) for w in bw)) / expect
    print(f"inject: +{(i - b) / 1e6:.2f} ms per walk (fastest walks), expected "
          f"{expect / 1e6:.2f} ms ({tables:.0f} tables x {delay} ns): x{ratio:.2f}, "
          f"medians x{med:.2f} ({r.accel})")
    assert 0.8 <= ratio <= upper, (b, i, tables, expect, r.accel)
    nspte_b = min(known(w.ns_per_pte, w) for w in bw)
    nspte_i = min(known(w.ns_per_pte, w) for w in iw)
    assert nspte_i - nspte_b >= 0.8 * delay * tables / known(iw[0].ptes)

    # the tracepoint backend parses this kernel's mmap_lock layout
    tp = _result(f, "tracepoint.json")
    assert tp.backend == Backend.tracepoint, tp.backend_fallback
    assert known(tp.kernel_view).target_mm_found is True
    assert any(w.lock_hold_ns is not None for w in tp.walks)

    # ptwalk monitor with the module catches a walker it was not told about
    mon, run = _load(f, "monitor.json"), _result(f, "monitored.json")
    assert mon["backend"] == "module"
    scanner, target = run.walks[0].walker_pid, known(run.workload).pid
    seen = [w for w in mon["walks"]
            if w["holder"]["pid"] == scanner and w["target"]["tgid"] == target]
    assert len(seen) == len(run.walks), (len(seen), len(run.walks))
    assert all(w["kind"] == "clear_refs" and w["mode"] == "write" for w in seen)
    # the bpf backend, on this kernel's form of the tracepoints, saw each of
    # those walks as a write hold of the workload's mm, named by a fact, and
    # held as long as the module measured it (two views of one hold)
    bpf = _load(f, "monitor_bpf.json")
    assert bpf["backend"] == "bpf", bpf.get("bpf_unavailable")
    assert bpf["min_hold_ns"] == 200_000
    held = [h for h in bpf["holds"] if h["holder"]["pid"] == scanner and h["mode"] == "write"
            and h["target"]["tgid"] == target]
    assert held and all(h["target"]["basis"] in ("mm_owner", "probe") for h in held), held
    lost = bpf["lost_events"]
    # Both read the clock in a probe on the same tracepoint call, the
    # module's first: they differ by what runs between the two probes, a few
    # microseconds, more when an interrupt lands there (up to 0.24 ms seen
    # under TCG). Under TCG with thread=single one host thread runs both
    # vCPUs in turn while guest time follows the host clock, so a vCPU switch
    # between the two probes stretches that gap by the other vCPU's turn:
    # consecutive clock reads on one vCPU of this guest jumped by 1-5.5 ms
    # about 130 times a second while the other vCPU was busy (0.8 ms at most
    # with it idle). Such a switch inside a few-microsecond window is rare
    # but not negligible over 10 walks x 2 ends x 3 kernels (seen once in
    # CI). KVM: every walk within 0.5 ms + 5%. TCG: the typical walk still
    # must agree (median within 50 us) and at most one walk in five may be
    # off by a stretch, which cannot exceed a few vCPU turns (10 ms).
    diffs, stretched = [], []
    for mw in seen:   # the monitor's walks
        m = [h for h in held if abs(h["start_ns"] - mw["start_ns"]) < mw["span_ns"] + 1_000_000]
        if not m:
            assert lost, ("bpf missed a walk, nothing lost", mw, held)
            continue
        d = m[0]["hold_ns"] - mw["lock_hold_ns"]
        diffs.append(abs(d))
        if abs(d) > 500_000 + 0.05 * mw["lock_hold_ns"]:
            stretched.append((d, m[0], mw))
    print(f"bpf vs module hold: {len(diffs)} walks, median |diff| "
          f"{statistics.median(diffs) / 1e3 if diffs else float('nan'):.1f} us, "
          f"{len(stretched)} beyond 0.5 ms + 5% ({r.accel}): {[d for d, _, _ in stretched]}")
    assert diffs and statistics.median(diffs) <= 50_000, sorted(diffs)
    if r.accel != "tcg":
        assert not stretched, stretched
    else:
        assert len(stretched) <= len(diffs) // 5, stretched
        assert all(abs(d) <= 10_000_000 for d, _, _ in stretched), stretched
