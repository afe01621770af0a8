#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make bench, VM part: ptwalk.ko's overhead on each walk kind (same boot,
loaded vs not, rounds interleaved) under icount on the 6.1, 6.12 and 7.3
cloud kernels (target: at most x1.02 each), the smallest injected
regression ptwalk compare detects at 95% confidence within a 2-minute run
budget, and the power of ptwalk compare: pairs of POWER_RUNS runs (QUICK=1
run settings) without and with inject_delay_ns adding P% to clear_refs
ns/PTE, on the same kernels: +10%, +2% and +0.5% under icount (target:
+0.5% flagged in at least 9 of 10 pairs, A/A flags 0), +10% and +2% under
real time. Emulated (TCG) real-time figures carry the caveat that traps
cost far more there than on hardware.

  bench_vm.py            all of it
  bench_vm.py --power [--clock icount|realtime] [--pct P] [--pairs N]
              [--runs R] [--kernel ID] [--sequential]
                         one power figure (default: icount, +10%, 10 pairs,
                         6.12-cloud-amd64); P may be a fraction (0.5)
  bench_vm.py --overhead [--kernel ID] [--clock C] [--rounds N]
                         ptwalk.ko's overhead per walk kind: walk time
                         loaded over not, N interleaved rounds (default
                         5, icount)
  bench_vm.py --calibrate [--clock C] [--pairs N] [--kernel ID]
                         A/A pairs in that clock mode, written as the A/A
                         calibration ptwalk compare picks for it
                         (results/budgets/aa-noise-vm-ACCEL-CLOCK.json)"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ptwalk_report import compare  # noqa: E402
from ptwalk_report import results as res  # noqa: E402
from ptwalk_report import walk_kinds  # noqa: E402
from ptwalk_vm import config as vmconfig  # noqa: E402
from ptwalk_vm import vm as pipeline  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PCTS = [5, 10, 25, 50, 100]
RUNS = 3  # per set: (2 s scan + overhead) x 3, about 20 s of runs per set
POWER_PAIRS = 10
POWER_RUNS = 8    # per set: 8 runs of 0.8 s scans, well within QUICK's 2 minutes
POWER_PCTS = (10.0, 2.0, 0.5)  # 0.5: a little over three times icount's A/A floor (0.15%)
POWER_KERNELS = ("6.1-cloud-amd64", "6.12-cloud-amd64", "7.3-cloud-amd64")
POWER_CLOCKS = ("icount", "realtime")
DEFAULT_KERNEL = "6.12-cloud-amd64"
METRIC = "walk clear_refs ns/PTE"
SIZING_TOLERANCE = 0.20  # the measured effect within 20% of the intended one


def med(d: Path) -> float:
    return statistics.median(w["ns_per_pte"] for f in d.glob("*.json")
                             for w in json.loads(f.read_text())["walks"]
                             if "incomplete" not in w)


@dataclass
class Power:
    """One power session: what was injected, what was flagged."""
    kernel: str
    accel: str
    clock: str
    pct: float
    pairs: int
    runs: int
    flagged: int = 0
    aa_flagged: int = 0
    aa_pairs: int = 0
    effects: list[float] = field(default_factory=list)  # measured, per pair (fraction)
    sizing: str = ""          # the guest's fitted inject_delay_ns line
    noise: str = ""           # which A/A calibration and minimum change were used
    error: str = ""

    @property
    def effect(self) -> float:
        return statistics.median(self.effects) if self.effects else float("nan")

    @property
    def sized_ok(self) -> bool:
        return bool(self.effects) and abs(self.effect / (self.pct / 100) - 1) <= SIZING_TOLERANCE

    def line(self, order: str) -> str:
        if self.error:
            return f"  power ({self.kernel}, {self.clock}): not measured: {self.error}"
        target = " (target >= 9 of 10)" if self.clock == "icount" else ""
        return (f"  power ({self.kernel}, {self.accel}, {self.clock}, {self.runs} vs "
                f"{self.runs} runs a pair, {order}): +{self.pct:g}% on clear_refs ns/PTE "
                f"flagged in {self.flagged} of {self.pairs} pairs{target}; intended "
                f"+{self.pct:g}%, measured {self.effect:+.2%} (median of pairs; "
                f"{'within' if self.sized_ok else 'NOT within'} 20%); "
                f"A/A in the same boot: {self.aa_flagged} of {self.aa_pairs} consecutive "
                f"baselines flagged; {self.noise}")


def find_kernel(cfg: vmconfig.Config, kid: str) -> vmconfig.Kernel:
    """KID in any matrix, every flavour (test_matrices keeps one flavour
    of some: "debian-7.3:cloud-amd64")."""
    ks, missing = cfg.matrices(cfg.matrix_names())
    k = next((k for k in ks if k.id == kid), None)
    if k is None:
        raise vmconfig.ConfigError(f"no kernel {kid!r} (have: {', '.join(k.id for k in ks)}; "
                                   f"skipped: {'; '.join(missing) or 'none'})")
    if k.ko is None:
        raise vmconfig.ConfigError(f"{kid}: no ptwalk.ko built for {k.release} "
                                   "(make module-matrix)")
    return k


def found_kernels(cfg: vmconfig.Config, kids: tuple[str, ...],
                  what: str) -> Iterator[vmconfig.Kernel]:
    """The kernels of KIDS found here; each one missing is printed as a
    skip of WHAT (a format with {} for the kernel id)."""
    for kid in kids:
        try:
            yield find_kernel(cfg, kid)
        except vmconfig.ConfigError as e:
            print(f"  {what.format(kid)}: skipped: {e}")


def run_vm_script(cfg: vmconfig.Config, k: vmconfig.Kernel, script: str, args: str,
                  run_dir: Path, out: Path | None, **opts: Any) -> pipeline.parse.VmResult:
    """`sh scripts/vm/SCRIPT PTWALK.KO PTWALK ARGS` in one boot of k, with
    RunOptions opts; when it succeeded, the guest's files under out."""
    r = pipeline.run_in_vm(cfg, k, f"sh scripts/vm/{script} /ptwalk/module/ptwalk.ko "
                           f"/ptwalk/build/ptwalk {args}".rstrip(),
                           pipeline.RunOptions(add=[(REPO / "scripts/vm" / script,
                                                     f"/ptwalk/scripts/vm/{script}")], **opts),
                           run_dir)
    if r.ok and out is not None:
        for name, data in r.files.items():
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_bytes(data)
    return r


def run_power(cfg: vmconfig.Config, k: vmconfig.Kernel, out: Path, *, clock: str,
              pairs: int, runs: int, pct: float, order: str,
              log=sys.stderr) -> tuple[pipeline.parse.VmResult, str]:
    """scripts/vm/power.sh in one boot; its result files under OUT."""
    accel = "tcg" if clock == "icount" else "auto"
    r = run_vm_script(cfg, k, "power.sh", f"128M {runs} {pairs} {pct:g} {order}", out / "vm", out,
                      timeout=3600.0, smp=1, accel=accel, clock=clock, log=log)
    sizing = next((ln.strip() for ln in (r.stdout or "").splitlines()
                   if ln.startswith("power: baseline")), "")
    return r, sizing


def _noise_note(nc: compare.NoiseChoice) -> str:
    where = nc.path.name if nc.path else "no A/A calibration"
    return f"noise: {where}, min change {nc.min_change_pct:g}% ({nc.min_change_from})"


def power(cfg: vmconfig.Config, k: vmconfig.Kernel, pairs: int = POWER_PAIRS,
          runs: int = POWER_RUNS, pct: float = 10, order: str = "interleaved",
          clock: str = "icount", noise_arg: str | None = None, quiet: bool = False,
          log=sys.stderr) -> Power:
    """Pairs A (no delay) / B (+pct% injected) compared as ptwalk compare
    would: with the A/A calibration measured under the results' clock."""
    pw = Power(k.id, "?", clock, pct, pairs, runs)

    def say(line: str) -> None:
        if not quiet:
            print(line)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        r, pw.sizing = run_power(cfg, k, out, clock=clock, pairs=pairs, runs=runs, pct=pct,
                                 order=order, log=log)
        pw.accel = r.accel
        if not r.ok:
            pw.error = f"VM run failed: {r.problem()}"
            say(pw.line(order))
            return pw
        keep = os.environ.get("BENCH_VM_KEEP")  # a directory to keep the result sets in
        if keep:
            for name, data in r.files.items():
                (Path(keep) / name).parent.mkdir(parents=True, exist_ok=True)
                (Path(keep) / name).write_bytes(data)
        say(f"  power sizing ({k.id}, {clock}): {pw.sizing or 'none printed by the guest'}")
        sets = {f"p{i}/{s}": res.load([out / f"p{i}" / s])
                for i in range(1, pairs + 1) for s in "AB"}
        nc = compare.choose_noise([x for v in sets.values() for x in v], noise_arg=noise_arg)
        pw.noise = _noise_note(nc)
        for i in range(1, pairs + 1):
            a, b = sets[f"p{i}/A"], sets[f"p{i}/B"]
            c = compare.compare_sets(a, b, min_change_pct=nc.min_change_pct, noise=nc.noise)
            row = next((x for s in c.scenarios for x in s.rows if x.metric == METRIC), None)
            hit = c.verdict == compare.REGRESSION and row is not None and row.significant
            pw.flagged += hit
            eff = med(out / f"p{i}" / "B") / med(out / f"p{i}" / "A") - 1
            pw.effects.append(eff)
            how = ("no ns/PTE row" if row is None else f"ns/PTE not tested: {row.note}"
                   if not row.tested else f"ns/PTE {row.change_pct:+.2f}% q={row.q:.3g} "
                   f"noise {row.noise_pct:.2f}% ({row.noise_from})")
            say(f"  power pair {i}: injected +{pct:g}% measured {eff:+.2%}; {how}: "
                f"{'flagged' if hit else 'NOT flagged'}")
            if i > 1:  # the A sets of consecutive pairs: an A/A in the same boot
                aa = compare.compare_sets(sets[f"p{i - 1}/A"], a,
                                          min_change_pct=nc.min_change_pct, noise=nc.noise)
                pw.aa_flagged += aa.verdict in (compare.REGRESSION, compare.IMPROVEMENT)
                pw.aa_pairs += 1
    say(pw.line(order))
    return pw


def calibrate(cfg: vmconfig.Config, k: vmconfig.Kernel, clock: str, pairs: int, runs: int,
              dest: Path | None = None) -> int:
    """A/A pairs (power.sh with no injection) in CLOCK mode -> the A/A
    calibration ptwalk compare picks for results under that clock."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        r, _ = run_power(cfg, k, out, clock=clock, pairs=pairs, runs=runs, pct=0,
                         order="interleaved")
        if not r.ok:
            print(f"  A/A calibration ({k.id}, {clock}): VM run failed: {r.problem()}")
            return 1
        sets = [(res.load([out / f"p{i}" / "A"]), res.load([out / f"p{i}" / "B"]))
                for i in range(1, pairs + 1)]
    ons = sorted({x.measured_on for a, b in sets for x in a + b if x.usable})
    if len(ons) != 1 or not ons[0].vm:
        print(f"  A/A calibration ({k.id}, {clock}): results carry no single VM clock: "
              f"{'; '.join(map(str, ons)) or 'none'}")
        return 1
    noise = compare.aa_noise(sets, digits=2)
    if not noise:
        print(f"  A/A calibration ({k.id}, {clock}): no metric measured")
        return 1
    walk = [v for key, v in noise.items() if key.split("|", 1)[1].startswith("walk ")]
    floor = max(walk or noise.values())
    path = dest or Path(compare.noise_file_for(ons[0]))
    doc = {"schema": compare.NOISE_SCHEMA,
           "comment": "A/A calibration of ptwalk compare for results of ptwalk-vm guests "
                      f"under {ons[0]}: per scenario and metric, the largest |%change of run "
                      "means| between A/A pairs (scripts/vm/power.sh with no injection, A and "
                      "B interleaved run by run in one boot); min_change_pct, the smallest "
                      "change flagged in this clock mode, is the largest of them over the walk "
                      "metrics. Measured by scripts/bench_vm.py --calibrate.",
           "source": f"{pairs} A/A pairs of {runs} vs {runs} runs of clear_refs over 128M "
                     f"(QUICK=1 run settings), one boot of {k.id}",
           "pairs": pairs, "host": socket.gethostname(),
           "kernel": sorted({x.release for a, b in sets for x in a + b}),
           "clock": {"accel": ons[0].accel, "clock": ons[0].clock, "qemu": ons[0].qemu},
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
           "min_change_pct": floor,
           "noise_pct": dict(sorted(noise.items()))}
    part = path.with_suffix(".tmp")
    part.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    os.replace(part, path)
    print(f"  A/A calibration ({k.id}, {ons[0]}): {len(noise)} scenario metrics from {pairs} "
          f"pairs, min change {floor:g}%: {path}")
    return 0


def _profiles_in(names: set[str]) -> list[str]:
    """The scanner profiles among `names` (what a VM script wrote), in the
    order of walk_kinds.def."""
    return [p.value for p in walk_kinds.Profile if p.value in names]


def _median_syscall(files: list[Path]) -> float:
    """Median over runs of each run's median syscall_ns per walk."""
    per_run = []
    for f in files:
        walks = [w for w in json.loads(f.read_text())["walks"] if "incomplete" not in w]
        per_run.append(statistics.median(w["syscall_ns"] for w in walks))
    return statistics.median(per_run)


@dataclass
class Overhead:
    """ptwalk.ko's cost on one walk kind: walk time with it loaded over not
    loaded, per interleaved round (each side the median syscall_ns of its
    run's walks)."""
    kind: str
    no_ns: float          # median over rounds, module not loaded
    mod_ns: float         # median over rounds, module loaded
    ratios: list[float]   # per round, loaded over not

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)


OVERHEAD_TARGET = 1.02  # issue 33: at most 2% on every kind
OVERHEAD_KERNELS = POWER_KERNELS


def overhead(cfg: vmconfig.Config, k: vmconfig.Kernel, rounds: int = 5,
             clock: str = "icount", log=sys.stderr) -> tuple[list[Overhead], str, str]:
    """scripts/vm/bench-overhead.sh in one boot of K: per kind, the walk's
    time with ptwalk.ko loaded and not, ROUNDS interleaved rounds. Returns
    the kinds measured, the accel, and why none were (else "")."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        icount = clock == "icount"
        r = run_vm_script(cfg, k, "bench-overhead.sh", f"256M {rounds}", out / "vm", out,
                          timeout=3600.0, clock=clock, accel="tcg" if icount else "auto",
                          smp=1 if icount else 2, log=log)
        if not r.ok:
            return [], r.accel, r.problem() or "VM run failed"
        rows = []
        # the kinds scripts/vm/bench-overhead.sh measured, in the table's order
        for kind in _profiles_in({f.name.rsplit("-", 1)[0]
                                  for f in (out / "nomodule").glob("*.json")}):
            per = []
            for i in range(1, rounds + 1):
                no, mod = out / "nomodule" / f"{kind}-{i}.json", out / "module" / f"{kind}-{i}.json"
                if no.exists() and mod.exists():
                    per.append((_median_syscall([no]), _median_syscall([mod])))
            if per:
                rows.append(Overhead(kind, statistics.median(x for x, _ in per),
                                     statistics.median(y for _, y in per),
                                     [y / x for x, y in per]))
        return rows, r.accel, "" if rows else "no kind measured on both sides"


def overhead_lines(k: vmconfig.Kernel, rows: list[Overhead], accel: str, clock: str) -> list[str]:
    note = (" (TCG real time: a probe's trap costs far more than on hardware)"
            if accel == "tcg" and clock != "icount" else "")
    return [f"  module overhead ({k.id}, {accel}, {clock}): {o.kind} walk "
            f"{o.no_ns / 1e6:.3f} -> {o.mod_ns / 1e6:.3f} ms with ptwalk.ko loaded: "
            f"x{o.ratio:.4f} (rounds x{min(o.ratios):.4f}..x{max(o.ratios):.4f}, "
            f"{len(o.ratios)} interleaved; target <= x{OVERHEAD_TARGET:g}: "
            f"{'met' if o.ratio <= OVERHEAD_TARGET else 'NOT met'}){note}" for o in rows]


def overhead_matrix(cfg: vmconfig.Config, clock: str = "icount") -> int:
    """make bench: the module's overhead per kind on each version with a
    module, under icount (instructions: the probes' own work, not TCG's
    trap emulation time)."""
    rc = 0
    for k in found_kernels(cfg, OVERHEAD_KERNELS, f"module overhead ({{}}, {clock})"):
        rows, accel, why = overhead(cfg, k, clock=clock)
        if why:
            print(f"  module overhead ({k.id}, {clock}): failed: {why}")
            rc = 1
        for line in overhead_lines(k, rows, accel, clock):
            print(line)
    return rc


def agreement(cfg: vmconfig.Config, k: vmconfig.Kernel) -> int:
    """The three views' agreement on each kind (scripts/vm/crossvalidate.sh)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        x = run_vm_script(cfg, k, "crossvalidate.sh", "", out / "xv", None, timeout=900.0)
        if not x.ok:
            print(f"  attribution agreement: failed: {x.problem()}")
            return 1
        # the profiles scripts/vm/crossvalidate.sh ran, in the table's order
        for kind in _profiles_in({n[:-len(".json")] for n in x.files if n.endswith(".json")}):
            val = res.parse(Path(f"{kind}.json"), json.loads(x.files[f"{kind}.json"])).validation
            for st in (val.stalls, val.stalls_tracepoint) if val is not None else ():
                if st is None:
                    continue
                print(f"  attribution agreement ({k.name}, {x.accel}): {kind}, "
                      f"{st.view.value if st.view else None} vs victims' clocks: recall "
                      f"{st.recalled}/{st.reference_ops}, precision "
                      f"{st.confirmed}/{st.stalls_checked} (target >= 95% each)")
    return 0


def power_matrix(cfg: vmconfig.Config) -> int:
    """make bench: +10%, +2% and +0.5% on 6.1, 6.12 and 7.3 cloud under
    icount; +10% and +2% under real time (+0.5% is far below its noise)."""
    rc = 0
    for clock in POWER_CLOCKS:
        for k in found_kernels(cfg, POWER_KERNELS, f"power ({{}}, {clock})"):
            for pct in POWER_PCTS if clock == "icount" else [p for p in POWER_PCTS if p >= 1]:
                rc |= bool(power(cfg, k, pct=pct, clock=clock, quiet=True).error)
    return rc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--power", action="store_true", help="the power figure only")
    ap.add_argument("--overhead", action="store_true",
                    help="the module's overhead per walk kind only")
    ap.add_argument("--rounds", type=int, default=5, help="--overhead: interleaved rounds")
    ap.add_argument("--calibrate", action="store_true",
                    help="measure the A/A calibration of the clock mode")
    ap.add_argument("--clock", choices=("icount", "realtime"), default="icount")
    ap.add_argument("--pct", type=float, default=10,
                    help="injected %%, fractions allowed (default 10)")
    ap.add_argument("--pairs", type=int, default=POWER_PAIRS)
    ap.add_argument("--runs", type=int, default=POWER_RUNS, help="runs per set")
    ap.add_argument("--kernel", default=DEFAULT_KERNEL, help="kernel id, e.g. 6.1-cloud-amd64")
    ap.add_argument("--sequential", action="store_true",
                    help="set A then set B (default: interleaved run by run)")
    ap.add_argument("--noise", metavar="FILE",
                    help="A/A calibration to use (default: the one for the results' clock)")
    ap.add_argument("--out", type=Path, help="--calibrate: write here instead")
    a = ap.parse_args(argv)
    for name, v, lo, hi in (("--pct", a.pct, 0.1, 1000), ("--pairs", a.pairs, 1, 100),
                            ("--runs", a.runs, 3, 100), ("--rounds", a.rounds, 1, 50)):
        if not lo <= v <= hi:
            print(f"bench_vm: error: {name} must be in {lo}..{hi}", file=sys.stderr)
            return 2
    cfg = vmconfig.load()
    if a.power or a.calibrate or a.overhead:
        try:
            k = find_kernel(cfg, a.kernel)
        except vmconfig.ConfigError as e:
            print(f"bench_vm: error: {e}", file=sys.stderr)
            return 2
        if a.overhead:
            rows, accel, why = overhead(cfg, k, rounds=a.rounds, clock=a.clock)
            for line in overhead_lines(k, rows, accel, a.clock):
                print(line)
            if why:
                print(f"bench_vm: module overhead ({k.id}): {why}", file=sys.stderr)
            return 1 if why else 0
        if a.calibrate:
            return calibrate(cfg, k, a.clock, a.pairs, a.runs, a.out)
        pw = power(cfg, k, pairs=a.pairs, runs=a.runs, pct=a.pct, clock=a.clock,
                   order="sequential" if a.sequential else "interleaved", noise_arg=a.noise)
        return 1 if pw.error else 0
    ks, missing = cfg.matrix()
    found = next((x for x in ks if x.name == "cloud-amd64" and x.ko), None)
    if found is None:
        print(f"  VM benchmarks: skipped: no cloud-amd64 kernel with ptwalk.ko ({missing})")
        return 0
    k = found
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        r = run_vm_script(cfg, k, "bench.sh", f"128M {RUNS} " + " ".join(map(str, PCTS)),
                          out / "vm", out, timeout=1200.0)
        if not r.ok:
            print(f"  VM benchmarks: failed: {r.problem()}")
            return 1
        no, mod = med(out / "nomodule"), med(out / "module")
        print(f"  module overhead ({k.name}, {r.accel}): clear_refs {no:.1f} -> {mod:.1f} ns/PTE "
              f"with ptwalk.ko loaded: x{mod / no:.3f}"
              + (" (TCG: kprobe traps cost far more than on hardware; target <= 2% on"
                 " real hardware)" if r.accel == "tcg" else ""))
        smallest = None
        for pct in PCTS:
            p = subprocess.run(["/usr/bin/python3", str(REPO / "scripts/ptwalk-compare"),
                                str(out / "nomodule"), str(out / f"inject{pct}")],
                               capture_output=True, text=True)
            eff = med(out / f"inject{pct}") / no - 1
            flagged = p.returncode == 1
            print(f"  injected +{pct}% (measured {eff:+.1%}): "
                  f"{'REGRESSION detected' if flagged else 'not detected'}")
            if flagged and smallest is None:
                smallest = (pct, eff)
        print("  smallest injected regression detected at 95%: "
              + (f"+{smallest[0]}% (measured {smallest[1]:+.1%}), {RUNS} runs of 2 s per set"
                 if smallest else "none of " + ", ".join(f"+{p}%" for p in PCTS)))
    rc = agreement(cfg, k)
    rc |= overhead_matrix(cfg)
    return power_matrix(cfg) or rc


if __name__ == "__main__":
    sys.exit(main())
