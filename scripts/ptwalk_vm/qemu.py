"""Boot step: the qemu command line, running it under a timeout, and the
KVM-or-TCG decision (probed once per host kernel release, cached)."""
from __future__ import annotations

import json
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TextIO

from .config import ArchSettings

# Serial ports, in -serial order (ttyS0..ttyS3 in the guest); see init.sh.
LOGS = ("console.log", "channel.log", "stdout.log", "stderr.log")
# How guest time runs: realtime (the host's clock) or icount (guest
# instructions; TCG only). kernels.toml's icount_args say how.
CLOCKS = ("realtime", "icount")


class QemuError(ValueError):
    pass


@dataclass
class BootParams:
    kernel: Path
    initrd: Path
    arch: ArchSettings
    accel: str = "tcg"  # "kvm" or "tcg"
    mem: str = "2G"
    smp: int = 2
    append_extra: tuple[str, ...] = ()
    clock: str = "realtime"  # one of CLOCKS


def guest_facts(accel: str, cpu: str, clock: str, version: str) -> list[str]:
    """Kernel command-line words that tell ptwalk in the guest how it runs
    (its results' host.vm): ptwalk_accel=tcg ptwalk_clock=icount ..."""
    words = {"ptwalk_accel": accel, "ptwalk_clock": clock, "ptwalk_cpu": cpu,
             "ptwalk_qemu": version.split()[0] if version else "unknown"}
    return [f"{k}={v}" for k, v in words.items() if v and " " not in v]


def qemu_command(p: BootParams, run_dir: Path, version: str = "") -> list[str]:
    a = p.arch
    if p.clock not in CLOCKS:
        raise QemuError(f"clock must be one of {', '.join(CLOCKS)}, not {p.clock!r}")
    if p.clock == "icount" and p.accel != "tcg":
        raise QemuError("--clock icount needs TCG: KVM runs the guest on the host's clock")
    if p.clock == "icount" and not a.icount_args:
        raise QemuError(f"--clock icount: no icount_args in [arch.{a.name}] of kernels.toml")
    accel = p.accel
    if accel == "tcg" and a.tcg_opts:
        accel = f"tcg,{a.tcg_opts}"
    cpu = a.cpu_kvm if p.accel == "kvm" else a.cpu_tcg
    cmd = [a.qemu, "-machine", a.machine, "-accel", accel, "-cpu", cpu,
           "-m", p.mem, "-smp", str(p.smp), *a.extra_args,
           *(a.icount_args if p.clock == "icount" else ()),
           "-kernel", str(p.kernel), "-initrd", str(p.initrd),
           "-append", " ".join([*a.append, *p.append_extra,
                                *guest_facts(p.accel, cpu, p.clock, version)])]
    for name in LOGS:
        cmd += ["-serial", f"file:{run_dir / name}"]
    return cmd


@dataclass
class BootOutcome:
    returncode: int | None
    timed_out: bool
    wall_s: float
    stderr: str
    error: str | None = None  # qemu could not be started


class _Tail(threading.Thread):
    """Copy what the guest writes to the log files onto our own streams."""

    def __init__(self, pairs: list[tuple[Path, TextIO]]) -> None:
        super().__init__(daemon=True)
        self.pairs = pairs
        self.stop = threading.Event()
        self.pos = [0] * len(pairs)

    def pump(self) -> None:
        for i, (path, out) in enumerate(self.pairs):
            try:
                with path.open("rb") as f:
                    f.seek(self.pos[i])
                    data = f.read()
            except OSError:
                continue
            if data:
                self.pos[i] += len(data)
                out.write(data.decode("utf-8", "replace"))
                out.flush()

    def run(self) -> None:
        while not self.stop.wait(0.2):
            self.pump()
        self.pump()


def boot(cmd: list[str], run_dir: Path, timeout: float,
         stream: list[tuple[str, TextIO]] | None = None) -> BootOutcome:
    """Run qemu; kill it after TIMEOUT seconds. STREAM: (log name, file) pairs
    to follow live (e.g. [("stdout.log", sys.stdout)])."""
    run_dir.mkdir(parents=True, exist_ok=True)
    for name in LOGS:
        (run_dir / name).write_bytes(b"")
    tail = _Tail([(run_dir / n, f) for n, f in stream]) if stream else None
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as e:
        return BootOutcome(None, False, 0.0, "", error=f"cannot start {cmd[0]}: {e}")
    if tail:
        tail.start()
    timed_out = False
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill(proc)
        out, _ = proc.communicate()
    wall = time.monotonic() - t0
    if tail:
        tail.stop.set()
        tail.join()
    return BootOutcome(proc.returncode, timed_out, round(wall, 3),
                       out.decode("utf-8", "replace"))


def _kill(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)  # own session: qemu and nothing else
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def shell_line(cmd: list[str]) -> str:
    return shlex.join(cmd)


def cpu_model(cmd: list[str]) -> str:
    """The -cpu value of a qemu command line ("" without one)."""
    return cmd[cmd.index("-cpu") + 1] if "-cpu" in cmd[:-1] else ""


_VERSIONS: dict[str, str] = {}


def qemu_version(qemu: str) -> str:
    """QEMU's version as `qemu --version` states it ("10.0.2 (Debian
    1:10.0.2+ds-2+deb13u1~bpo12+1)"), or why it could not be read."""
    if qemu not in _VERSIONS:
        try:
            out = subprocess.run([qemu, "--version"], capture_output=True, text=True,
                                 timeout=20).stdout
            first = out.splitlines()[0] if out else ""
            _VERSIONS[qemu] = first.split("version", 1)[1].strip() if "version" in first \
                else f"unknown ({first.strip() or 'no output'})"
        except (OSError, subprocess.TimeoutExpired) as e:
            _VERSIONS[qemu] = f"unknown ({e})"
    return _VERSIONS[qemu]


# ---- KVM or TCG ------------------------------------------------------------

def kvm_usable() -> str | None:
    """None if /dev/kvm can be opened read-write, else the reason."""
    if not os.path.exists("/dev/kvm"):
        return "/dev/kvm does not exist"
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "no read/write access to /dev/kvm"
    return None


def _cache_key(qemu: str) -> str:
    return f"{platform.release()} {shutil.which(qemu) or qemu}"


def resolve_accel(requested: str, cache: Path, qemu: str,
                  probe: Callable[[], tuple[bool, str]],
                  log: Callable[[str], None] = lambda s: print(s, file=sys.stderr)
                  ) -> tuple[str, str]:
    """Return (accel, why). REQUESTED is auto, kvm or tcg. In auto mode KVM is
    used only if PROBE (a short real boot) succeeded on this host kernel
    release; the answer is cached in CACHE (JSON keyed by release and qemu).
    PTWALK_VM_ACCEL=kvm|tcg in the environment replaces auto."""
    if requested in ("kvm", "tcg"):
        return requested, "requested"
    env = os.environ.get("PTWALK_VM_ACCEL", "")
    if requested == "auto" and env in ("kvm", "tcg"):
        return env, "PTWALK_VM_ACCEL"
    if requested != "auto":
        raise ValueError(f"accel must be auto, kvm or tcg, not {requested!r}")
    reason = kvm_usable()
    if reason:
        return "tcg", reason
    key = _cache_key(qemu)
    try:
        known = json.loads(cache.read_text())
    except (OSError, ValueError):
        known = {}
    if key in known:
        ok = bool(known[key]["ok"])
        return ("kvm" if ok else "tcg"), f"cached in {cache}: {known[key]['why']}"
    log(f"ptwalk-vm: probing KVM (cached in {cache}) ...")
    ok, why = probe()
    known[key] = {"ok": ok, "why": why, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(known, indent=1) + "\n")
    except OSError as e:
        log(f"ptwalk-vm: cannot cache the KVM probe in {cache}: {e}")
    return ("kvm" if ok else "tcg"), f"probe: {why}"
