"""ptwalk-vm command line. Steps run alone or together:

  ptwalk-vm [run] [--kernel IMAGE] [options] -- COMMAND...   build, boot, run, parse
  ptwalk-vm initramfs --kernel IMAGE -o FILE -- COMMAND...    build step only
  ptwalk-vm boot --kernel IMAGE --initrd FILE --run-dir DIR   boot step (+ parse)
  ptwalk-vm parse RUN_DIR                                     parse saved logs
  ptwalk-vm matrix [--matrix NAME] [--json]                   list matrix kernels

Exit status: the command's own status if the run was clean, else
120 kernel problem (oops/BUG/WARNING/lockdep/KASAN/panic/Call Trace),
121 guest died (no exit status on the channel), 122 harness error, 124 timeout.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Sequence

from . import config, initramfs, parse, qemu, vm
from .config import Config, ConfigError, Kernel

SUBCOMMANDS = ("run", "initramfs", "boot", "parse", "matrix")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", type=Path, default=config.DEFAULT_TOML, help="kernel matrix TOML")
    p.add_argument("--kernel", type=Path,
                   help="kernel image (bzImage); default: every matrix kernel")
    p.add_argument("--matrix", help="matrix name in the TOML (default: its default_matrix)")
    p.add_argument("--name", default=None, help="name for --kernel (default: its release)")
    p.add_argument("--modules", type=Path, help="module tree of --kernel (/lib/modules/REL)")
    p.add_argument("--kdir", type=Path,
                   help="headers/build dir of --kernel (recorded, for module builds)")
    p.add_argument("--ko", type=Path, help="ptwalk.ko for --kernel (default: found by vermagic)")
    p.add_argument("--arch", default="x86_64",
                   help="guest architecture, an [arch.NAME] of the TOML (default x86_64)")


def _run_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--add", action="append", default=[], metavar="HOST[:GUEST]",
                   help="file or dir to copy into the guest (default guest dir /ptwalk)")
    p.add_argument("--no-default-files", action="store_true",
                   help="do not add module/ptwalk.ko, build/ptwalk, build/selftests")
    p.add_argument("--modprobe", action="append", default=[], metavar="MODULE",
                   help="copy MODULE (+deps) from the module tree and modprobe it at boot")
    p.add_argument("--env", action="append", default=[], metavar="K=V",
                   help="set K=V in the guest command's environment")
    p.add_argument("--mem", default="2G", help="guest memory (default 2G)")
    p.add_argument("--smp", type=int, default=2, help="guest vCPUs (default 2)")
    p.add_argument("--accel", choices=("auto", "kvm", "tcg"), default="auto",
                   help="auto: KVM if a probe boot works on this host (cached), else TCG")
    p.add_argument("--clock", choices=qemu.CLOCKS, default="realtime",
                   help="guest time: realtime (the host's clock) or icount (guest "
                   "instructions, repeatable, blind to cache/TLB/memory latency; TCG only)")
    p.add_argument("--append", action="append", default=[], help="extra kernel command line word")
    p.add_argument("--allow", action="append", default=[], metavar="REGEX",
                   help="tolerate kernel-log lines matching REGEX (also: allow in kernels.toml)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per boot (default 600)")


def make_parser(sub: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"ptwalk-vm {sub}", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    if sub == "parse":
        p.add_argument("run_dir", type=Path)
        p.add_argument("--json", action="store_true")
        p.add_argument("--allow", action="append", default=[], metavar="REGEX",
                       help="tolerate kernel-log lines matching REGEX (added to meta.json's)")
        return p
    _common(p)
    if sub == "matrix":
        p.add_argument("--json", action="store_true")
        return p
    _run_opts(p)
    if sub == "initramfs":
        p.add_argument("-o", "--output", type=Path, required=True)
    if sub == "boot":
        p.add_argument("--initrd", type=Path, required=True)
        p.add_argument("--run-dir", type=Path, required=True)
    if sub == "run":
        p.add_argument("--results", type=Path, default=vm.BUILD / "last",
                       help="results root; one subdir per kernel (default build/vm/last)")
        p.add_argument("-q", "--quiet", action="store_true", help="do not stream guest output")
        p.add_argument("-v", "--verbose", action="store_true",
                       help="also stream the kernel console")
    if sub in ("run", "initramfs"):
        p.add_argument("command", nargs="*", help="shell command run in the guest (after --)")
    return p


def kernels(cfg: Config, a: argparse.Namespace) -> list[Kernel]:
    if a.kernel is not None:
        k = cfg.kernel(a.name or "custom", a.kernel, arch=a.arch,
                       headers=str(a.kdir) if a.kdir else None,
                       module_dir=str(a.modules) if a.modules else None, ko=a.ko)
        if a.ko is not None and config.module_release(a.ko) != k.release:
            print(f"ptwalk-vm: warning: {a.ko} has vermagic {config.module_release(a.ko)}, "
                  f"kernel is {k.release}; insmod will likely fail", file=sys.stderr)
        return [k if a.name else dataclasses.replace(k, name=k.release)]
    ks, missing = cfg.matrix(a.matrix)
    for m in missing:
        print(f"ptwalk-vm: skipping {m}", file=sys.stderr)
    if not ks:
        raise ConfigError("no kernel of the matrix is installed")
    return ks


def options(a: argparse.Namespace) -> vm.RunOptions:
    bad = [kv for kv in a.env if "=" not in kv]
    if bad:
        raise ConfigError(f"--env wants K=V, got {bad[0]!r}")
    env = dict(kv.split("=", 1) for kv in a.env)
    if a.clock == "icount" and a.accel == "kvm":
        raise ConfigError("--clock icount needs --accel tcg: "
                          "KVM runs the guest on the host's clock")
    # icount is TCG's: never let auto pick KVM under it
    accel = "tcg" if a.clock == "icount" else a.accel
    return vm.RunOptions(timeout=a.timeout, mem=a.mem, smp=a.smp, accel=accel, clock=a.clock,
                         add=[initramfs.parse_add(x, config.PROJECT) for x in a.add],
                         default_files=not a.no_default_files, modprobe=a.modprobe,
                         append=a.append, env=env, allow=a.allow,
                         stream=not getattr(a, "quiet", True),
                         verbose=getattr(a, "verbose", False))


def report(r: parse.VmResult, name: str) -> int:
    code = r.exit_code()
    timing = f"wall {r.wall_s} s, kernel boot {r.boot_s} s, command {r.command_s} s"
    print(f"ptwalk-vm: {name}: command exit {r.returncode}, harness exit {code}, "
          f"accel {r.accel}, {timing}; files: {', '.join(sorted(r.files)) or 'none'}"
          + (f"; results in {r.run_dir}" if r.run_dir else ""), file=sys.stderr)
    problem = r.problem()
    if problem:
        print("ptwalk-vm: FAILED " + name + ":\n  " + problem.replace("\n", "\n  "),
              file=sys.stderr)
    return code


def cmd_run(cfg: Config, a: argparse.Namespace) -> int:
    if not a.command:
        print("ptwalk-vm: no command given (ptwalk-vm [options] -- COMMAND...)", file=sys.stderr)
        return parse.EXIT_HARNESS
    opts = options(a)
    codes: list[int] = []
    for k in kernels(cfg, a):
        r = vm.run_in_vm(cfg, k, a.command, opts, a.results / k.name)
        codes.append(report(r, k.name))
    if len(codes) > 1:
        print(f"ptwalk-vm: exits per kernel: {codes}", file=sys.stderr)
    return next((c for c in codes if c), 0)


def cmd_initramfs(cfg: Config, a: argparse.Namespace) -> int:
    k = kernels(cfg, a)[0]
    manifest = vm.build_initramfs(cfg, k, a.command or ["true"], options(a), a.output)
    print("\n".join(manifest))
    print(f"ptwalk-vm: wrote {a.output} for {k.name} ({k.release})", file=sys.stderr)
    return 0


def cmd_boot(cfg: Config, a: argparse.Namespace) -> int:
    k = kernels(cfg, a)[0]
    opts = options(a)
    accel, why = vm.choose_accel(cfg, k, opts)
    r = vm.boot_step(cfg, k, a.initrd.resolve(), opts, a.run_dir, accel, why)
    return report(r, k.name)


def cmd_parse(a: argparse.Namespace) -> int:
    r = parse.parse_run_dir(a.run_dir, extra_allow=a.allow)
    if a.json:
        print(json.dumps(r.to_json(), indent=1))
    else:
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr)
    return report(r, r.kernel or str(a.run_dir))


def cmd_matrix(cfg: Config, a: argparse.Namespace) -> int:
    ks = kernels(cfg, a)

    def value(v: object) -> object:
        if isinstance(v, tuple):
            return list(v)
        return str(v) if isinstance(v, Path) else v
    if a.json:
        print(json.dumps([{k2: value(v) for k2, v in k.__dict__.items()} for k in ks], indent=1))
    else:
        for k in ks:
            ko = f"ko={k.ko}" if k.ko else f"ko=None ({k.no_module})"
            print(f"{k.name:14} {k.release:24} {k.image}  headers={k.headers} "
                  f"modules={k.module_dir} {ko}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    sub = args.pop(0) if args and args[0] in SUBCOMMANDS else "run"
    command: list[str] = []
    if "--" in args:
        i = args.index("--")
        args, command = args[:i], args[i + 1:]
    a = make_parser(sub).parse_args(args)
    if command:
        if not hasattr(a, "command"):
            print(f"ptwalk-vm {sub}: takes no command", file=sys.stderr)
            return parse.EXIT_HARNESS
        a.command = [*a.command, *command]
    try:
        if sub == "parse":
            return cmd_parse(a)
        cfg = config.load(a.config)
        return {"run": cmd_run, "initramfs": cmd_initramfs, "boot": cmd_boot,
                "matrix": cmd_matrix}[sub](cfg, a)
    except (ConfigError, initramfs.InitramfsError, OSError) as e:
        print(f"ptwalk-vm: error: {e}", file=sys.stderr)
        return parse.EXIT_HARNESS
