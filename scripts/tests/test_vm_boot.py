"""Real boots under qemu (TCG): the boot each matrix kernel's suites share
(ptwalk_vm/suites.py), judged as a boot, plus one kernel for timeout,
panic, WARN and the CLI. Skips (or fails with PTWALK_REQUIRE_VM=1)
without qemu, busybox-static or a readable kernel image."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ptwalk_vm import config, parse
from ptwalk_vm.config import Kernel
from ptwalk_vm.pytest_plugin import (BOOT_SLOTS, KernelSuites, RunInVm, matrix_kernels,
                                     skip_or_fail, vm_unavailable)

DATA = Path(__file__).with_name("data")
SCRIPT = Path(__file__).resolve().parents[1] / "ptwalk-vm"
pytestmark = pytest.mark.vm


def pick_kernel(vm_config: config.Config, name: str) -> Kernel:
    """Kernel for a single-boot test: the matrix kernel NAME if there (spreads
    the boots over the matrix), else the first one (or PTWALK_VM_KERNEL)."""
    ks, missing = matrix_kernels(vm_config)
    if not ks:
        skip_or_fail("no matrix kernel installed: " + "; ".join(missing))
    return next((k for k in ks if k.name == name), ks[0])


def test_boot_matrix_kernel(vm_kernel: Kernel, kernel_suites: KernelSuites,
                            cxx_hello: Path | None, vm_config: config.Config) -> None:
    """The boot every suite of this kernel shares (ptwalk_vm/suites.py),
    judged as a boot, and its first suite, the harness's own checks."""
    run = kernel_suites(vm_kernel)
    w = run.whole
    print(f"\n{vm_kernel.name}: qemu {w.wall_s} s, kernel->init {w.boot_s} s, suites "
          + ", ".join(f"{n} {r.command_s} s" for n, r in run.suites.items()))
    # the boot itself: no timeout, the result channel whole, no kernel-log
    # problem outside the suites' own parts of the log
    assert not w.timed_out and not w.harness_error and w.complete, w.problem()
    assert not run.unclaimed, run.unclaimed
    assert f"-accel {w.accel}" in w.qemu_cmdline
    # every result names the QEMU and the CPU model it ran on
    assert w.qemu_version[:1].isdigit() and w.cpu in (vm_config.arch(vm_kernel.arch).cpu_tcg,
                                                      vm_config.arch(vm_kernel.arch).cpu_kvm)
    assert w.stdout.splitlines()[0] == vm_kernel.release
    # the boot's exit status, on its own channel, counts the suites that
    # exited non-zero (each suite's status comes back in a file of its own)
    assert w.returncode == sum(r.returncode != 0 for r in run.suites.values()), \
        (w.returncode, {n: r.returncode for n, r in run.suites.items()})

    r = run.suite("harness")
    assert r.problem() is None, r.problem()
    assert r.returncode == 3 and r.exit_code() == 3 and r.complete and not r.findings
    assert r.stdout == f"{vm_kernel.release}\n"
    assert r.stderr == "oops-not\n"  # the detector reads kernel logs, not the command's output
    assert r.files["x"] == b"hi\n" and r.files["d/y"] == b"deep\n"
    assert f"Linux version {vm_kernel.release}" in r.dmesg
    if cxx_hello is not None:
        assert r.files["cxx.txt"] == b"hello from c++\n"
    if vm_kernel.ko is not None:
        assert r.files["vermagic"].decode().split()[0] == f"vermagic={vm_kernel.release}"
    assert w.run_dir and (Path(w.run_dir) / "results" / "harness" / "d" / "y").read_bytes() \
        == b"deep\n"


def test_timeout_is_enforced(vm_config: config.Config, run_in_vm: RunInVm) -> None:
    k = pick_kernel(vm_config, "cloud-amd64")
    r = run_in_vm(k, "echo sleeping; sleep 1000", accel="tcg", timeout=20)
    # the guest's own wall time: waiting for a boot slot is not the boot's
    assert r.wall_s is not None and r.wall_s < 45, r.wall_s
    assert r.timed_out and r.exit_code() == parse.EXIT_TIMEOUT and r.returncode is None
    assert (r.problem() or "").startswith("TIMEOUT: guest did not finish within 20 s")
    assert r.stdout in ("", "sleeping\n")  # "" if a loaded host did not even boot in 20 s


def test_panic_is_reported(vm_config: config.Config, run_in_vm: RunInVm) -> None:
    k = pick_kernel(vm_config, "rt-amd64")
    r = run_in_vm(k, "echo c > /proc/sysrq-trigger; echo survived", accel="tcg", timeout=120)
    assert not r.timed_out and not r.complete and r.returncode is None
    assert r.exit_code() == parse.EXIT_KERNEL_PROBLEM
    assert r.findings[0].kind == "panic" and "sysrq triggered crash" in r.findings[0].line
    assert "survived" not in r.stdout


def test_warn_fails_a_successful_command(vm_config: config.Config, run_in_vm: RunInVm,
                                         tmp_path: Path) -> None:
    k = pick_kernel(vm_config, "amd64")
    if k.headers is None or shutil.which("make") is None or shutil.which("gcc") is None:
        pytest.skip(f"cannot build a test module for {k.release} (need make, gcc, headers)")
    src = tmp_path / "warnmod"
    shutil.copytree(DATA / "warnmod", src)
    subprocess.run(["make", "-s", "-C", str(k.headers), f"M={src}", "modules"], check=True,
                   capture_output=True)
    r = run_in_vm(k, "insmod /ptwalk/ptwalk_vm_warn.ko && echo loaded",
                  [(src / "ptwalk_vm_warn.ko", "/ptwalk/ptwalk_vm_warn.ko")], accel="tcg",
                  timeout=120)
    assert r.returncode == 0 and r.stdout == "loaded\n" and r.complete
    assert r.exit_code() == parse.EXIT_KERNEL_PROBLEM
    warn = [f for f in r.findings if f.kind == "warning"]
    assert warn and warn[0].source == "dmesg" and "ptwalk_vm_warn_init" in warn[0].line


def test_cli_end_to_end(vm_config: config.Config, tmp_path: Path) -> None:
    k = pick_kernel(vm_config, "cloud-amd64")
    reason = vm_unavailable(vm_config, k)
    if reason:
        skip_or_fail(reason)
    with BOOT_SLOTS:
        p = subprocess.run([sys.executable, str(SCRIPT), "--kernel", str(k.image), "--name",
                            "cli", "--accel", "tcg", "--timeout", "120", "--no-default-files",
                            "--results", str(tmp_path), "--", "echo", "out;",
                            "echo 42 > /results/n;", "exit", "5"], capture_output=True, text=True)
    assert p.returncode == 5, p.stderr
    assert p.stdout == "out\n"  # streamed live from the guest
    assert "+ qemu-system-x86_64 " in p.stderr and "-accel tcg" in p.stderr
    assert (tmp_path / "cli" / "results" / "n").read_text() == "42\n"
    # the parse step alone gives the same verdict from the saved logs
    q = subprocess.run([sys.executable, str(SCRIPT), "parse", str(tmp_path / "cli")],
                       capture_output=True, text=True)
    assert q.returncode == 5 and q.stdout == "out\n"


def test_cli_steps_alone(vm_config: config.Config, tmp_path: Path) -> None:
    """initramfs, then boot, then parse, each as its own invocation."""
    k = pick_kernel(vm_config, "rt-amd64")
    reason = vm_unavailable(vm_config, k)
    if reason:
        skip_or_fail(reason)
    initrd = tmp_path / "i.cpio.gz"
    b = subprocess.run([sys.executable, str(SCRIPT), "initramfs", "--kernel", str(k.image),
                        "--no-default-files", "-o", str(initrd), "--", "echo step > /results/s"],
                       capture_output=True, text=True)
    assert b.returncode == 0 and initrd.stat().st_size > 100_000, b.stderr
    run_dir = tmp_path / "run"
    with BOOT_SLOTS:
        c = subprocess.run([sys.executable, str(SCRIPT), "boot", "--kernel", str(k.image),
                            "--accel", "tcg", "--timeout", "120", "--initrd", str(initrd),
                            "--run-dir", str(run_dir)],
                           capture_output=True, text=True)
    assert c.returncode == 0, c.stderr
    assert (run_dir / "results" / "s").read_text() == "step\n"
    d = subprocess.run([sys.executable, str(SCRIPT), "parse", "--json", str(run_dir)],
                       capture_output=True, text=True)
    assert d.returncode == 0 and '"exit_code": 0' in d.stdout


def test_icount_clock_reaches_the_guest(vm_config: config.Config, run_in_vm: RunInVm) -> None:
    """--clock icount: qemu runs with icount_args, the result says so, and
    ptwalk in the guest reads it from its command line (its results'
    host.vm), as it does the accelerator, CPU model and QEMU version."""
    k = pick_kernel(vm_config, "cloud-amd64")
    cmd = ("cat /proc/cmdline; /ptwalk/build/ptwalk run --size 4M --duration 1s --interval 250ms "
           "--victims none --backend syscall --out /results/r.json > /dev/null")
    r = run_in_vm(k, cmd, accel="tcg", clock="icount", timeout=180, default_files=True)
    assert r.ok, r.problem()
    assert r.clock == "icount" and " -icount shift=0,sleep=off " in r.qemu_cmdline
    words = dict(w.split("=", 1) for w in r.stdout.split() if w.startswith("ptwalk_"))
    assert words == {"ptwalk_accel": "tcg", "ptwalk_clock": "icount",
                     "ptwalk_cpu": r.cpu, "ptwalk_qemu": r.qemu_version.split()[0]}
    host = json.loads(r.files["r.json"])["host"]
    assert host["vm"] == {"accel": "tcg", "clock": "icount", "cpu": r.cpu,
                          "qemu": r.qemu_version.split()[0]}
