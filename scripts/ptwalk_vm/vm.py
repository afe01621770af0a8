"""The whole pipeline for one kernel: initramfs -> boot -> parse -> save."""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence, TextIO

from . import config, initramfs, parse, qemu
from .config import Config, Kernel

BUILD = config.PROJECT / "build" / "vm"
KVM_CACHE = BUILD / "kvm-ok"
KVM_PROBE_TIMEOUT = 20.0


@dataclass
class RunOptions:
    timeout: float = 600.0
    mem: str = "2G"
    smp: int = 2
    accel: str = "auto"            # auto | kvm | tcg
    clock: str = "realtime"        # realtime | icount (TCG only): qemu.CLOCKS
    add: list[tuple[Path, str]] = field(default_factory=list)
    default_files: bool = True     # module/ptwalk.ko, build/ptwalk, build/selftests
    modprobe: list[str] = field(default_factory=list)
    append: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    allow: list[str] = field(default_factory=list)  # regexes of tolerated kernel-log lines
    stream: bool = False           # follow guest stdout/stderr live
    verbose: bool = False          # also follow the kernel console
    log: TextIO = sys.stderr


def command_string(command: str | Sequence[str]) -> str:
    """Like ssh: a list of words is joined with spaces and run by /bin/sh."""
    return command if isinstance(command, str) else " ".join(command)


def guest_files(cfg: Config, kernel: Kernel, opts: RunOptions) -> list[tuple[Path, str]]:
    files: list[tuple[Path, str]] = []
    if opts.default_files:
        if kernel.ko is not None:
            files.append((kernel.ko, f"{initramfs.GUEST_ROOT}/module/ptwalk.ko"))
        for p in cfg.default_files():
            if p.exists():
                files.append(initramfs.parse_add(str(p), config.PROJECT))
    files += opts.add
    return files


def hang_dump_after(timeout: float) -> int:
    """Guest command runtime after which init dumps blocked tasks (sysrq w):
    before the host timeout, leaving room for boot (guest clock starts later)."""
    return max(1, int(min(timeout - 10, timeout * 0.8)))


def build_initramfs(cfg: Config, kernel: Kernel, command: str | Sequence[str],
                    opts: RunOptions, out: Path) -> list[str]:
    env = {"PTWALK_HANG_DUMP_S": str(hang_dump_after(opts.timeout)), **opts.env}
    spec = initramfs.Spec(command=command_string(command),
                          files=guest_files(cfg, kernel, opts),
                          module_dir=kernel.module_dir if opts.modprobe else None,
                          modprobe=list(opts.modprobe), env=env)
    if opts.modprobe and kernel.module_dir is None:
        raise initramfs.InitramfsError(f"--modprobe needs a module dir for {kernel.name}")
    return initramfs.build_initramfs(spec, out)


def choose_accel(cfg: Config, kernel: Kernel, opts: RunOptions) -> tuple[str, str]:
    arch = cfg.arch(kernel.arch)

    def probe() -> tuple[bool, str]:
        with tempfile.TemporaryDirectory(prefix="ptwalk-vm-kvm-") as d:
            o = RunOptions(timeout=KVM_PROBE_TIMEOUT, mem="512M", smp=1, accel="kvm",
                           default_files=False, log=opts.log)
            r = run_in_vm(cfg, kernel, "true", o, Path(d))
        if r.ok:
            return True, f"KVM booted {kernel.release} in {r.wall_s} s"
        why = r.problem() or "failed"
        return False, f"KVM boot of {kernel.release} failed: {why.splitlines()[0][:200]}"

    accel, why = qemu.resolve_accel(opts.accel, KVM_CACHE, arch.qemu, probe,
                                    log=lambda s: print(s, file=opts.log))
    return accel, why if len(why) < 120 else why[:117] + "..."


def run_in_vm(cfg: Config, kernel: Kernel, command: str | Sequence[str],
              opts: RunOptions, run_dir: Path) -> parse.VmResult:
    """Boot KERNEL, run COMMAND, return the result. RUN_DIR receives the
    initramfs, all logs, meta.json, result.json and results/ (guest files)."""
    log = opts.log
    run_dir.mkdir(parents=True, exist_ok=True)
    if (run_dir / "results").exists():
        shutil.rmtree(run_dir / "results")
    accel, why = choose_accel(cfg, kernel, opts)
    initrd = run_dir / "initramfs.cpio.gz"
    manifest = build_initramfs(cfg, kernel, command, opts, initrd)
    (run_dir / "manifest.txt").write_text("\n".join(manifest) + "\n")
    print(f"ptwalk-vm: {kernel.name} ({kernel.release}): "
          f"ko {kernel.ko or 'none: ' + (kernel.no_module or 'none built for this release')}; "
          f"{len(manifest)} added files, listed in {run_dir / 'manifest.txt'}", file=log)
    return boot_step(cfg, kernel, initrd, opts, run_dir, accel, why)


def boot_step(cfg: Config, kernel: Kernel, initrd: Path, opts: RunOptions, run_dir: Path,
              accel: str, why: str) -> parse.VmResult:
    """Boot a prepared initramfs, save meta.json, parse and save the result."""
    log = opts.log
    params = qemu.BootParams(kernel=kernel.image, initrd=initrd, arch=cfg.arch(kernel.arch),
                             accel=accel, mem=opts.mem, smp=opts.smp,
                             append_extra=tuple(opts.append), clock=opts.clock)
    version = qemu.qemu_version(params.arch.qemu)
    cmd = qemu.qemu_command(params, run_dir, version)
    line = qemu.shell_line(cmd)
    print(f"ptwalk-vm: {kernel.id} ({kernel.release}), accel {accel} ({why}), "
          f"clock {opts.clock}, qemu {version}", file=log)
    print(f"+ {line}", file=log, flush=True)
    stream: list[tuple[str, TextIO]] = []
    if opts.stream:
        stream = [("stdout.log", sys.stdout), ("stderr.log", sys.stderr)]
    if opts.verbose:
        stream.append(("console.log", log))
    out = qemu.boot(cmd, run_dir, opts.timeout, stream)
    meta = {"kernel": kernel.name, "release": kernel.release, "image": str(kernel.image),
            "accel": accel, "accel_why": why, "qemu_cmdline": line,
            "qemu_version": version, "cpu": qemu.cpu_model(cmd), "clock": opts.clock,
            "timed_out": out.timed_out, "timeout": opts.timeout,
            "qemu_returncode": out.returncode, "qemu_stderr": out.stderr, "wall_s": out.wall_s,
            "allow": [*cfg.allow(), *opts.allow], "harness_error": out.error,
            "ko": str(kernel.ko or ""), "no_module": "" if kernel.ko else kernel.no_module}
    (run_dir / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    result = parse.parse_run_dir(run_dir)
    save_result(result, run_dir)
    return result


def save_result(result: parse.VmResult, run_dir: Path) -> None:
    (run_dir / "dmesg.txt").write_text(result.dmesg)
    res = run_dir / "results"
    for name, data in result.files.items():
        dest = (res / name).resolve()
        if res.resolve() not in dest.parents:  # refuse ../ from the guest
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
    (run_dir / "result.json").write_text(json.dumps(result.to_json(), indent=1) + "\n")
