"""Several suites in one boot of a kernel, each judged on its own.

A boot under TCG costs 15-30 s before the first command runs, and the VM
suites of make test (the module's acceptance, the cross-validation, the
selftests with the module, the module's own selftest) each used to boot
every matrix kernel once more. Like kunit.py and LKP, this boots a kernel
once and runs its suites one after the other (scripts/vm/suite.sh), then
splits what came back into one VmResult per suite: its exit status, output,
files, guest run time and the kernel-log problems of its own part of the
log, so a failure still names its suite and its kernel. What no suite
claims (the boot, between suites, power-off) is the boot's own
(SuitesRun.unclaimed).

    run = run_suites(cfg, kernel, [Suite("acceptance", (...), ...)], run_dir)
    r = run.suite("acceptance")        # a VmResult, as a boot of its own gave
"""
from __future__ import annotations

import dataclasses
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from . import parse
from . import vm as pipeline
from .config import PROJECT, Config, Kernel
from .parse import Finding, VmResult

RUNNER = "scripts/vm/suite.sh"
META = ".suites"  # /results/.suites/NAME: the runner's record of suite NAME
BEGIN = "ptwalk-suite: begin "
END = "ptwalk-suite: end "
BOOT_S = 120  # host timeout allowance for boot, result transfer and power-off


@dataclass(frozen=True)
class Suite:
    """One suite: a guest command run from /ptwalk with its results in
    $PTWALK_RESULTS (/results/NAME), the files it needs, its time limit."""

    name: str
    argv: tuple[str, ...]
    limit_s: int
    files: tuple[tuple[Path, str], ...] = ()
    env: tuple[tuple[str, str], ...] = ()

    def line(self) -> str:
        env = ("env", *(f"{k}={v}" for k, v in self.env)) if self.env else ()
        words = ("sh", RUNNER, self.name, str(self.limit_s), *env, *self.argv)
        return " ".join(shlex.quote(w) for w in words)


def _project(rel: str, guest: str | None = None) -> tuple[Path, str]:
    return PROJECT / rel, guest or f"/ptwalk/{rel}"


# the acceptance suite's delay per PTE table (ptwalk.ko's inject_delay_ns):
# 500 us is 11x a 6.12 walk's own cost per table under TCG, so the walk's
# other, noisy part stays small beside it; PREEMPT_RT accepts 100 us at
# most (PTW_MAX_INJECT_NS_RT, module/ptwalk.h)
ACCEPTANCE_INJECT_NS = 500_000
ACCEPTANCE_INJECT_NS_RT = 100_000


def harness_suite(hello: Path | None, ko: bool) -> Suite:
    """The harness's own checks, first in every boot: output, nested
    result files and the exit status travel apart from the kernel log, a
    dynamically linked C++ program (HELLO) runs, and the ptwalk.ko
    delivered (not loaded) was built for this kernel."""
    cmd = ('uname -r; echo hi > "$PTWALK_RESULTS/x"; mkdir -p "$PTWALK_RESULTS/d"; '
           'echo deep > "$PTWALK_RESULTS/d/y"; echo oops-not >&2')
    files: tuple[tuple[Path, str], ...] = ()
    if hello is not None:
        files = ((hello, "/ptwalk/build/hello"),)
        cmd += '; hello > "$PTWALK_RESULTS/cxx.txt"'
    if ko:
        cmd += '; strings /ptwalk/module/ptwalk.ko | grep ^vermagic= > "$PTWALK_RESULTS/vermagic"'
    return Suite("harness", ("sh", "-c", cmd + "; exit 3"), 60, files)


# The kernels that run a suite of their own beside the shared ones, in the
# same boot: the locking facts on the kernel that changed them
# (test_locking_in_vm.py), DAMON where Debian builds it with its sysfs
# (test_damon_in_vm.py; not 6.1)
LOCKING_KERNEL = "7.3-cloud-amd64"
DAMON_KERNELS = ("6.12-cloud-amd64", "7.3-cloud-amd64")


def own_suites(kernel: Kernel) -> list[Suite]:
    """The suites of KERNEL's own beyond the shared ones; module_suites()
    runs them before the module's selftest."""
    ptwalk = "/ptwalk/build/ptwalk"
    out = []
    if kernel.id == LOCKING_KERNEL:
        out.append(Suite("locking", ("sh", "scripts/vm/locking.sh", "/ptwalk/module/ptwalk.ko",
                                     ptwalk), 300, (_project("scripts/vm/locking.sh"),)))
    if kernel.id in DAMON_KERNELS:
        out.append(Suite("damon", ("sh", "scripts/vm/damon.sh", ptwalk), 200,
                         (_project("scripts/vm/damon.sh"),)))
    return out


def module_suites(inject_ns: int = ACCEPTANCE_INJECT_NS,
                  inject_ns_rt: int = ACCEPTANCE_INJECT_NS_RT,
                  own: Sequence[Suite] = ()) -> list[Suite]:
    """The suites that need ptwalk.ko, in the order one boot runs them: the
    timing-sensitive ones first, then the kernel's OWN (own_suites()),
    the load/unload and racing-exit cycles last (a kernel they hurt would
    show it in every suite after them)."""
    ko, ptwalk = "/ptwalk/module/ptwalk.ko", "/ptwalk/build/ptwalk"
    return [
        Suite("acceptance", ("sh", "scripts/vm/module-acceptance.sh", ko, ptwalk, "256M"), 600,
              (_project("scripts/vm/module-acceptance.sh"),),
              (("INJECT_NS", str(inject_ns)), ("INJECT_NS_RT", str(inject_ns_rt)))),
        Suite("crossvalidation", ("sh", "scripts/vm/crossvalidate.sh", ko, ptwalk), 600,
              (_project("scripts/vm/crossvalidate.sh"),)),
        Suite("selftests", ("sh", "scripts/vm/selftests.sh", ko, "/ptwalk/build/selftests"), 900,
              (_project("scripts/vm/selftests.sh"),)),
        *own,
        Suite("module-selftest", ("sh", "scripts/module-vm-selftest.sh", "/ptwalk/module"), 600,
              (_project("module/tests/vm-selftest.sh", "/ptwalk/scripts/module-vm-selftest.sh"),
               _project("module/tests/walker", "/ptwalk/module/walker"))),
    ]


def moduleless_suites() -> list[Suite]:
    """A kernel ptwalk.ko cannot be built for (kernels.toml's no_module:
    6.18, whose headers Debian no longer ships): the views that need no
    module, the victims' clocks against the tracepoints, and the
    selftests without it."""
    ptwalk = "/ptwalk/build/ptwalk"
    return [
        Suite("crossvalidation", ("sh", "scripts/vm/crossvalidate.sh", "none", ptwalk), 300,
              (_project("scripts/vm/crossvalidate.sh"),)),
        Suite("selftests", ("sh", "scripts/vm/selftests.sh", "none", "/ptwalk/build/selftests"),
              600, (_project("scripts/vm/selftests.sh"),)),
    ]


def command(suites: Sequence[Suite]) -> str:
    """The boot's command: the release, then each suite; its exit status is
    the number of suites that exited non-zero."""
    lines = ["uname -r", "failed=0"]
    lines += [f"{s.line()} || failed=$((failed + 1))" for s in suites]
    return "\n".join(lines + ["exit $failed"])


@dataclass
class SuitesRun:
    """One boot: the whole run as the harness saw it, and its suites."""

    whole: VmResult
    suites: dict[str, VmResult]
    unclaimed: list[Finding] = field(default_factory=list)

    def suite(self, name: str) -> VmResult:
        return self.suites[name]


def run_suites(cfg: Config, kernel: Kernel, suites: Sequence[Suite], run_dir: Path,
               opts: pipeline.RunOptions | None = None) -> SuitesRun:
    """Boot KERNEL once and run SUITES in order (default files delivered:
    ptwalk.ko, build/ptwalk, build/selftests)."""
    o = dataclasses.replace(opts) if opts else pipeline.RunOptions()
    o.add = [*o.add, _project(RUNNER)] + [f for s in suites for f in s.files]
    o.timeout = float(sum(s.limit_s for s in suites) + BOOT_S)
    whole = pipeline.run_in_vm(cfg, kernel, command(suites), o, run_dir)
    return split(whole, [s.name for s in suites], [*cfg.allow(), *o.allow])


def _segment(lines: list[str], name: str, first: bool) -> tuple[int, int] | None:
    """[begin, end) of suite NAME's lines in a log, from its begin marker
    (from the log's start for the boot's first suite) to its end marker
    or the end of the log; None when it never began."""
    begin = next((i for i, ln in enumerate(lines) if ln.rstrip().endswith(BEGIN + name)), None)
    if begin is None:
        return None
    end = next((i + 1 for i in range(begin, len(lines))
                if re.search(re.escape(END + name) + r" -?\d+\s*$", lines[i])), len(lines))
    return (0 if first else begin), end


def _status(text: bytes | None) -> tuple[int | None, float | None, float | None, bool]:
    """(exit status, guest seconds, limit, timed out) from the runner's
    status line; Nones when the suite did not end."""
    words = (text or b"").decode().split()
    if len(words) != 4 or not words[0].lstrip("-").isdigit():
        return None, None, None, False
    return int(words[0]), float(words[1]), float(words[2]), words[3] == "1"


def split(whole: VmResult, names: Sequence[str], allow: Sequence[str]) -> SuitesRun:
    """One VmResult per suite from the boot's result (works offline, on a
    saved run: parse.parse_run_dir)."""
    console = whole.console.splitlines()
    claimed: set[str] = set()
    out: dict[str, VmResult] = {}
    running = None
    for i, name in enumerate(names):
        files = {k[len(name) + 1:]: v for k, v in whole.files.items()
                 if k.startswith(name + "/")}
        meta = {k[len(META) + len(name) + 2:]: v for k, v in whole.files.items()
                if k.startswith(f"{META}/{name}/")}
        rc, secs, limit, late = _status(meta.get("status"))
        seg = _segment(console, name, i == 0)
        con = "\n".join(console[seg[0]:seg[1]]) + "\n" if seg else ""
        dmesg_all = parse._clean_dmesg(meta.get("dmesg", b"").decode("utf-8", "replace"))
        dl = dmesg_all.splitlines()
        dseg = _segment(dl, name, i == 0)
        dmesg = "\n".join(dl[dseg[0]:] if dseg else dl) + ("\n" if dl else "")
        findings = parse.detect(dmesg, con, allow)
        claimed |= {parse.strip_prefix(f.line) for f in findings}
        if seg is not None and rc is None:
            running = name
        error = None
        if seg is None and rc is None:
            error = (f"suite {name} did not run in this boot: "
                     + (whole.problem() or "the boot ended before it").splitlines()[0])
        truncated = [t for t in whole.truncated_files if t.startswith(name + "/")]
        out[name] = dataclasses.replace(
            whole, returncode=rc, stdout=meta.get("stdout", b"").decode("utf-8", "replace"),
            stderr=meta.get("stderr", b"").decode("utf-8", "replace"), dmesg=dmesg,
            files=files, console=con, findings=findings, truncated_files=truncated,
            timed_out=late or (whole.timed_out and running == name),
            complete=rc is not None and not truncated and (whole.complete or bool(files)),
            timeout=limit or whole.timeout, command_s=secs,
            harness_error=whole.harness_error or error)
    unclaimed = [f for f in whole.findings if parse.strip_prefix(f.line) not in claimed]
    return SuitesRun(whole, out, unclaimed)
