# SPDX-License-Identifier: GPL-2.0
"""Each matrix kernel boots BOOTS times of BOOTS under the harness's QEMU,
bare and with ptwalk.ko: the measurement behind the QEMU the matrix uses
(Debian 12's 7.2 double-faulted 6.12 guests in 2 of 3 TCG boots, with and
without the module; bookworm-backports' 10.0.2 is what scripts/deps.sh
installs). Every boot runs scripts/vm/boot-cycle.sh: first the kernel
alone (its walks and its log checked), then ptwalk.ko loaded, walked
through and unloaded. So each boot is one bare boot and one with the
module, and a failure says which stage it came in. The boots run in the
background with the session, after the kernels' suite boots, two guests at
a time with the session's other guests (each TCG guest is one host thread;
ptwalk_vm/reliability.py, pytest_plugin.reliability_boots); each boot has
its own run directory (PTWALK_VM_ARTIFACTS keeps a failed test's).

PTWALK_VM_BOOTS=N changes the count. The default, 5, is sized for the
failure QEMU 7.2 had: a QEMU-and-kernel pair that fails 2 boots in 3
passes 5 by chance with p = (1/3)^5 = 0.004 for one flavour and 7e-8 for
the three flavours of a series, which share the fault; one that fails 1
in 3, with p = 0.13 and 0.002. Each kernel also boots once more for its
suites (test_vm_boot.py judges that boot). 10 boots took twice the time
for a p the matrix does not need."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

import ptwalk_abi
from ptwalk_vm import parse, qemu
from ptwalk_vm.config import Config, Kernel
from ptwalk_vm.parse import VmResult
from ptwalk_vm.pytest_plugin import ReliabilityBoots, skip_or_fail, vm_unavailable
from ptwalk_vm.reliability import BOOTS, missing

QEMU_MIN = (10, 0)
KINDS = ["clear_refs", "clear_refs", "smaps", "smaps"]

pytestmark = [pytest.mark.vm]


def walker_kinds(text: bytes) -> list[dict[str, str]]:
    return [dict(ptwalk_abi.parse_record(line[5:])) for line in text.decode().splitlines()
            if line.startswith("walk ")]


def bare_stage(r: VmResult, release: str, allow: list[str]) -> str | None:
    """Why the kernel alone failed in this boot, or None."""
    if "bare-dmesg.txt" not in r.files:
        return r.problem() or f"the bare stage did not finish (exit {r.returncode})"
    if r.files.get("release", b"").decode().strip() != release:
        return f"ran {r.files.get('release')!r}, not {release}"
    found = parse.scan_kernel_log(r.files["bare-dmesg.txt"].decode(), "dmesg", allow)
    if found:
        return f"kernel log before insmod: {found[0]}"
    got = sorted(w["kind"] for w in walker_kinds(r.files["bare-walker.txt"]))
    return None if got == KINDS else f"the walker made {got}"


def module_stage(r: VmResult) -> str | None:
    """Why the boot failed once ptwalk.ko was loaded, or None."""
    if r.problem():
        return r.problem()
    if r.returncode != 0 or "module-done" not in r.files:
        return f"boot-cycle.sh exited {r.returncode}"
    walker = walker_kinds(r.files["walker.txt"])
    if sorted(w["kind"] for w in walker) != KINDS:
        return f"the walker made {[w['kind'] for w in walker]}"
    # every walk the walker made is one module record of its kind and target
    walks = [dict(ptwalk_abi.parse_record(line))
             for line in r.files["walks.txt"].decode().splitlines() if line.strip()]
    got = sorted((w["kind"], w["target_tgid"]) for w in walks
                 if w.get("walker_pid") == walker[0]["walker_pid"])
    want = sorted((w["kind"], w["target_tgid"]) for w in walker)
    return None if got == want else f"module records {got}, walker {want}"


def test_boots_every_time(vm_kernel: Kernel | None, vm_config: Config,
                          reliability_boots: ReliabilityBoots) -> None:
    if vm_kernel is None:
        skip_or_fail("no matrix kernel installed")
        return
    reason = vm_unavailable(vm_config, vm_kernel)
    if reason:
        skip_or_fail(reason)
    why = missing(vm_kernel)
    if why:
        pytest.fail(why)
    arch = vm_config.arch(vm_kernel.arch)
    ver = qemu.qemu_version(arch.qemu)
    nums = tuple(int(x) for x in ver.split()[0].split(".")[:2]) if ver[:1].isdigit() else (0, 0)
    assert nums >= QEMU_MIN, (f"{arch.qemu} is {ver}: the matrix needs QEMU >= "
                              f"{'.'.join(map(str, QEMU_MIN))} (scripts/deps.sh vm installs it)")

    results, out = reliability_boots(vm_kernel)
    allow = vm_config.allow()
    bare = [(i, bare_stage(r, vm_kernel.release, allow)) for i, r in enumerate(results)]
    bare_bad = [f"boot {i}: {why.splitlines()[0][:300]}" for i, why in bare if why]
    # a kernel without ptwalk.ko by design (6.18) boots bare alone
    mod_bad = [f"boot {i}: {(module_stage(r) or '').splitlines()[0][:300]}"
               for (i, why), r in zip(bare, results)
               if not why and not vm_kernel.moduleless and module_stage(r)]
    ran = BOOTS - len(bare_bad)
    line = f"{arch.qemu} {ver}, -cpu {results[0].cpu}, tcg"
    with_ko = (f"no ptwalk.ko ({vm_kernel.no_module})" if vm_kernel.moduleless else
               f"with ptwalk.ko {ran - len(mod_bad)} of {ran}")
    print(f"\n{vm_kernel.id}: bare {ran} of {BOOTS} clean, {with_ko} ({line}); wall "
          f"{min(r.wall_s or 0 for r in results):.1f}-{max(r.wall_s or 0 for r in results):.1f} s",
          file=sys.stderr)
    keep = os.environ.get("PTWALK_VM_ARTIFACTS")
    if keep and (bare_bad or mod_bad):
        shutil.copytree(out, Path(keep) / f"boots-{vm_kernel.id}", dirs_exist_ok=True)
    assert all(r.qemu_version == ver and r.cpu == arch.cpu_tcg for r in results)
    assert not bare_bad, f"the kernel alone failed in {len(bare_bad)} of {BOOTS} boots " \
        f"({line}):\n" + "\n".join(bare_bad)
    if vm_kernel.moduleless:
        # the bare stage was the whole boot: no module stage ran
        assert not [r for r in results if "module-done" in r.files or r.returncode != 0]
    assert not mod_bad, f"with ptwalk.ko, {len(mod_bad)} of {ran} boots failed " \
        f"({line}):\n" + "\n".join(mod_bad)


def _result(files: dict[str, bytes], rc: int | None = 0, dmesg: str = "") -> VmResult:
    return VmResult(returncode=rc, stdout="", stderr="", dmesg=dmesg, files=files, accel="tcg",
                    qemu_cmdline="q", complete=rc is not None)


def test_a_failed_stage_is_told_apart() -> None:
    """Offline: what the two stages call a failure, on made-up guest files."""
    rel = "6.12.95+deb12-amd64"
    walk = b"".join(b"walk kind=%s walker_pid=9 target_tgid=10 start_ns=1 end_ns=2\n" % k.encode()
                    for k in KINDS)
    rec = b"".join(b"seq=%d kind=%s walker_pid=9 target_tgid=10\n" % (i, k.encode())
                   for i, k in enumerate(KINDS))
    good = {"release": rel.encode() + b"\n", "bare-walker.txt": walk, "bare-dmesg.txt": b"",
            "walker.txt": walk, "walks.txt": rec, "module-done": b"done\n"}
    assert bare_stage(_result(good), rel, []) is None and module_stage(_result(good)) is None
    oops = dict(good, **{"bare-dmesg.txt": b"[    1.0] BUG: unable to handle page fault\n"})
    assert "kernel log before insmod" in (bare_stage(_result(oops), rel, []) or "")
    died = {k: v for k, v in good.items() if not k.startswith("bare-")}
    assert "GUEST DIED" in (bare_stage(_result(died, rc=None), rel, []) or "")
    assert "ran b'6.1" in (bare_stage(_result(dict(good, release=b"6.1.0-56-amd64\n")), rel, [])
                           or "")
    short = dict(good, **{"walks.txt": rec.splitlines(keepends=True)[0]})
    assert "module records" in (module_stage(_result(short)) or "")
    unload = {k: v for k, v in good.items() if k != "module-done"}
    assert "exited 15" in (module_stage(_result(unload, rc=15)) or "")
