#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The cross-version set: the standard scenarios on Debian's 6.1 and 6.12
(one flavour), each under TCG in icount and in real time, and on the host
kernel; then `ptwalk-compare` 6.1 against 6.12 per clock and per placement
of the fault victim's region.

  cross_version.py [--out DIR] [--runs N] [--size SIZE] [--flavour F]
                   [--clocks icount,realtime] [--host|--no-host] [--jobs N]
                   [--timeout S] [--dry-run]
  cross_version.py --reuse --out DIR     compare the result sets DIR holds

Standard scenarios: every walk kind of ptwalk.ko's contract (PTW_KINDS in
module/ptwalk_abi.h) x anon, thp, shmem x the fault victim's region below
and above the walked mapping; victims read, fault and mmap in every run.
Each cell runs N times, the runs of all cells interleaved, one boot per
kernel and clock (scripts/vm/cross-version.sh in the guest, through
ptwalk.ko); the host runs the same plan with no module.

Written under DIR: plan.txt (the guest's plan), vm/SIDE/results/*.json (SIDE
6.1-icount, 6.12-icount, 6.1-realtime, 6.12-realtime), host/results/*.json,
compare/CLOCK-PLACEMENT.{txt,json} (the verdict pairs: 6.1 vs 6.12),
compare/context-host-vs-6.12-realtime-PLACEMENT.{txt,json} (--mixed-clocks:
context only), flagged.json and flagged.md (every flagged row), victims.md
(the fault and mmap victims' worst waits, side by side), runs.json
(per side: runs done, skipped, failed), commands.sh (every command, as run).

Exit status: 0 every boot and compare ran; 1 a boot or run failed; 2 bad input.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_ab  # noqa: E402
import ptwalk_abi  # noqa: E402
from ptwalk_report import results as res  # noqa: E402
from ptwalk_vm import config  # noqa: E402

PROJECT = kernel_ab.PROJECT
BACKINGS = ("anon", "thp", "shmem")
PLACEMENTS = ("below", "above")
VICTIMS = "read,fault,mmap"
SERIES = {"6.1": "debian-6.1", "6.12": "debian-6.12"}
CLOCKS = ("icount", "realtime")
GUEST_SCRIPT = "scripts/vm/cross-version.sh"
BadInput = kernel_ab.BadInput


@dataclass(frozen=True)
class Cell:
    kind: str
    backing: str
    placement: str

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.backing}-{self.placement}"


def cells() -> list[Cell]:
    return [Cell(k, b, p) for k in ptwalk_abi.contract().kinds for b in BACKINGS
            for p in PLACEMENTS]


def run_args(c: Cell, a: argparse.Namespace) -> list[str]:
    return ["--size", a.size, "--backing", c.backing, "--populate-threads", "1",
            "--scanner", c.kind, "--interval", a.interval, "--duration", a.duration,
            "--victims", VICTIMS, "--fault-region", c.placement]


def plan_lines(a: argparse.Namespace) -> list[str]:
    """One line per run, "NAME-I ARGS": run I of every cell before run I+1."""
    return [f"{c.name}-{i} {' '.join(run_args(c, a))}"
            for i in range(1, a.runs + 1) for c in cells()]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = kernel_ab._Parser(prog="cross_version.py", description=__doc__,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=PROJECT / "build" / "cross-version")
    p.add_argument("--runs", default="3", help="runs of each cell per side (default 3)")
    p.add_argument("--size", default="16M", help="walked mapping (default 16M)")
    p.add_argument("--interval", default="100ms", help="between walks (default 100ms)")
    p.add_argument("--duration", default="600ms", help="of each run (default 600ms)")
    p.add_argument("--flavour", default="cloud-amd64", help="of both series (default cloud-amd64)")
    p.add_argument("--clocks", default=",".join(CLOCKS), help="of icount, realtime")
    p.add_argument("--host", action=argparse.BooleanOptionalAction, default=True,
                   help="also run the plan on the host kernel (default yes)")
    p.add_argument("--jobs", default="1",
                   help="icount boots at once (default 1; real-time ones always alone)")
    p.add_argument("--timeout", default="3600", help="seconds per boot (default 3600)")
    p.add_argument("--dry-run", action="store_true", help="write the plan, print the commands")
    p.add_argument("--reuse", action="store_true", help="boot nothing: compare what --out holds")
    a = p.parse_args(argv)
    a.out = a.out.resolve()
    a.clocks = [c for c in a.clocks.split(",") if c]
    bad = [c for c in a.clocks if c not in CLOCKS]
    if bad or not a.clocks:
        raise BadInput(f"--clocks wants some of {', '.join(CLOCKS)}, got {bad or 'none'}")
    try:
        a.runs, a.jobs, a.timeout = int(a.runs), int(a.jobs), float(a.timeout)
    except ValueError:
        raise BadInput(f"--runs and --jobs want integers and --timeout seconds, got "
                       f"{a.runs!r}, {a.jobs!r} and {a.timeout!r}") from None
    if not 3 <= a.runs <= 50:
        raise BadInput(f"--runs wants 3..50 (compare tests nothing below 3), got {a.runs}")
    if not 1 <= a.jobs <= 4 or a.timeout <= 0:
        raise BadInput(f"--jobs wants 1..4 and --timeout seconds > 0, got {a.jobs}, "
                       f"{a.timeout:g}")
    for opt in ("size", "interval", "duration"):
        if not re.fullmatch(r"[0-9]+[A-Za-z]*", getattr(a, opt)):
            raise BadInput(f"--{opt} {getattr(a, opt)!r}: want a number with a unit")
    return a


def kernels(flavour: str) -> dict[str, config.Kernel]:
    """Per series, the matrix kernel of FLAVOUR (image, release, ptwalk.ko)."""
    cfg = config.load()
    out = {}
    for series, matrix in SERIES.items():
        ks, missing = cfg.matrix(matrix)
        k = next((k for k in ks if k.name == flavour), None)
        if k is None:
            raise BadInput(f"no {flavour} kernel in matrix {matrix}: {'; '.join(missing)}")
        if k.ko is None:
            raise BadInput(f"ptwalk.ko not built for {k.release} (make module-matrix)")
        out[series] = k
    return out


def sides(a: argparse.Namespace) -> list[tuple[str, str, str]]:
    """(side, series, clock) of every boot, clocks outermost."""
    return [(f"{s}-{c}", s, c) for c in a.clocks for s in SERIES]


def boot_commands(a: argparse.Namespace, ks: dict[str, config.Kernel]
                  ) -> list[tuple[str, list[str]]]:
    plan = a.out / "plan.txt"
    out = []
    for side, series, clock in sides(a):
        k = ks[series]
        out.append((side, kernel_ab.vm_command(
            k.image, k.ko, name=side, results=a.out / "vm", accel="tcg", clock=clock,
            timeout=a.timeout, add=[GUEST_SCRIPT, f"{plan}:/ptwalk/plan.txt"],
            guest=["sh", GUEST_SCRIPT, "/ptwalk/module/ptwalk.ko", "/ptwalk/build/ptwalk",
                   "/ptwalk/plan.txt"])))
    if a.host:
        out.append(("host", ["sh", GUEST_SCRIPT, "none", "build/ptwalk", str(plan),
                             str(a.out / "host" / "results")]))
    return out


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _shell(cmd: Sequence[str]) -> str:
    """CMD for commands.sh: paths under the project made relative to it."""
    root = str(PROJECT) + "/"
    return " ".join(shlex.quote(c.replace(root, "")) for c in cmd)


def run_boots(a: argparse.Namespace, cmds: list[tuple[str, list[str]]]) -> dict[str, int]:
    """Each boot (and the host run, last and alone: it shares the CPUs),
    its output in DIR/logs/SIDE.log."""
    logs = a.out / "logs"
    logs.mkdir(parents=True, exist_ok=True)

    def one(side: str, cmd: list[str]) -> int:
        print(f"cross-version: {side}: {_shell(cmd)}", file=sys.stderr, flush=True)
        with open(logs / f"{side}.log", "w", encoding="utf-8") as log:
            rc = subprocess.run(cmd, cwd=PROJECT, stdout=log, stderr=subprocess.STDOUT,
                                check=False).returncode
        print(f"cross-version: {side}: exit {rc}", file=sys.stderr, flush=True)
        return rc
    # icount boots side by side (guest time counts guest instructions: the
    # host's load does not reach the figures); real-time boots and the
    # host run one at a time, as their figures would show each other
    icount = [(s, c) for s, c in cmds if s.endswith("-icount")]
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        rcs = dict(zip([s for s, _ in icount], pool.map(lambda sc: one(*sc), icount)))
    for s, c in cmds:
        if not s.endswith("-icount"):
            rcs[s] = one(s, c)
    return rcs


def side_dir(out: Path, side: str) -> Path:
    return out / "host" / "results" if side == "host" else out / "vm" / side / "results"


def run_counts(out: Path, side: str) -> dict[str, Any]:
    """Runs complete, and the others with why (a run this kernel cannot do,
    e.g. PAGEMAP_SCAN before 6.7, leaves its reason in "error")."""
    d = side_dir(out, side)
    done, other = 0, {}
    for j in sorted([*d.glob("*.json"), *d.glob("*.json.gz")]):
        name = j.name.removesuffix(".gz").removesuffix(".json")
        try:
            r = res.load([j])[0]
        except res.InputError as e:
            other[name] = f"unreadable: {e}"
            continue
        if r.usable:
            done += 1
        else:
            other[name] = r.error or r.interrupted or "incomplete"
    # a run that wrote no result (exit 4, unsupported here) left its log
    for t in sorted(d.glob("*.txt")):
        if t.stem not in other and not any(d.glob(t.stem + ".json*")):
            lines = t.read_text(errors="replace").strip().splitlines()
            other[t.stem] = "no result: " + (lines[-1] if lines else "empty log")
    return {"complete": done, "not_complete": other}


def compares(a: argparse.Namespace) -> list[tuple[str, list[str], bool]]:
    """(output stem, ptwalk-compare command, is a verdict pair)."""
    out = []
    cmp_ = [sys.executable, str(PROJECT / "scripts" / "ptwalk-compare")]

    def files(side: str, placement: str) -> list[str]:
        d = side_dir(a.out, side)
        # relative to the project (compare runs there): shorter labels
        return sorted(str(p.relative_to(PROJECT)) if p.is_relative_to(PROJECT) else str(p)
                      for p in [*d.glob(f"*-{placement}-*.json"),
                                *d.glob(f"*-{placement}-*.json.gz")])
    for clock in a.clocks:
        for pl in PLACEMENTS:
            stem = f"compare/{clock}-{pl}"
            out.append((stem, cmp_ + files(f"6.1-{clock}", pl) + ["--vs"]
                        + files(f"6.12-{clock}", pl) + ["--json", str(a.out / f"{stem}.json")],
                        True))
    if a.host and "realtime" in a.clocks:
        for pl in PLACEMENTS:
            stem = f"compare/context-host-vs-6.12-realtime-{pl}"
            out.append((stem, cmp_ + files("6.12-realtime", pl) + ["--vs"]
                        + files("host", pl) + ["--mixed-clocks", "--json",
                                               str(a.out / f"{stem}.json")], False))
    return out


def flagged(doc: dict[str, Any], pair: str) -> list[dict[str, Any]]:
    rows = []
    for sc in doc["scenarios"]:
        for r in sc["rows"]:
            if r["significant"]:
                rows.append({"pair": pair, "scenario": sc["scenario"], "metric": r["metric"],
                             "unit": r["unit"], "mean_6.1": r["mean_a"],
                             "mean_6.12": r["mean_b"], "change_pct": r["change_pct"],
                             "ci": [r["ci_low"], r["ci_high"]], "test": r["test"],
                             "q": r["q"], "verdict": r["verdict"], "runs": [r["n_a"], r["n_b"]]})
    return rows


def victim_tails(doc: dict[str, Any], pair: str) -> list[str]:
    """One markdown row per scenario: the fault and mmap victims' max
    during walks, mean of the runs' values, on each side."""
    out = []
    for sc in doc["scenarios"]:
        m = {r["metric"]: r for r in sc["rows"]}
        cols = []
        for v in ("fault", "mmap"):
            r = m.get(f"{v} max during walks")
            cols += [_fmt(r and r["mean_a"], "ns"), _fmt(r and r["mean_b"], "ns")]
        out.append(f"| {pair} | {sc['scenario']} | {' | '.join(cols)} |\n")
    return out


def _fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "ns/PTE":
        return f"{v:.2f} ns/PTE"
    return f"{v / 1e6:.2f} ms" if v >= 1e6 else f"{v / 1e3:.1f} us"


def evaluate(a: argparse.Namespace) -> tuple[int, list[str]]:
    """Every compare, the flagged rows, the run counts; commands run."""
    rc, ran = 0, []
    all_sides = [s for s, _, _ in sides(a)] + (["host"] if a.host else [])
    counts = {s: run_counts(a.out, s) for s in all_sides}
    _write(a.out / "runs.json", json.dumps(counts, indent=1, sort_keys=True) + "\n")
    rows: list[dict[str, Any]] = []
    tails: list[str] = []
    (a.out / "compare").mkdir(parents=True, exist_ok=True)
    for stem, cmd, verdict_pair in compares(a):
        vs = cmd.index("--vs")
        if vs == 2 or cmd[vs + 1].startswith("--"):
            _write(a.out / f"{stem}.txt", "no result files on one side: nothing compared\n")
            continue
        r = subprocess.run(cmd, cwd=PROJECT, capture_output=True, text=True, check=False)
        ran.append(_shell(cmd))
        _write(a.out / f"{stem}.txt", r.stdout + (f"[stderr] {r.stderr}" if r.stderr else ""))
        if r.returncode not in (0, 1):
            print(f"cross-version: {stem}: ptwalk-compare exit {r.returncode}: "
                  f"{r.stderr.strip()}", file=sys.stderr)
            rc = 1
            continue
        if verdict_pair:
            doc = json.loads((a.out / f"{stem}.json").read_text())
            rows += flagged(doc, stem.split("/", 1)[1])
            tails += victim_tails(doc, stem.split("/", 1)[1])
    _write(a.out / "flagged.json", json.dumps(rows, indent=1) + "\n")
    md = ["| pair (clock-placement) | scenario | metric | 6.1 | 6.12 | change | q | verdict |",
          "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for f in rows:
        md.append(f"| {f['pair']} | {f['scenario']} | {f['metric']} | "
                  f"{_fmt(f['mean_6.1'], f['unit'])} | {_fmt(f['mean_6.12'], f['unit'])} | "
                  f"{f['change_pct']:+.1f}% | {f['q']:.3g} | {f['verdict']} |")
    _write(a.out / "flagged.md", "\n".join(md) + "\n")
    _write(a.out / "victims.md",
           "Worst victim waits during walks, mean over runs of each run's max (reported,\n"
           "not tested: a max is a tail; compare/*.txt has every quantile)\n\n"
           "| pair | scenario | fault 6.1 | fault 6.12 | mmap 6.1 | mmap 6.12 |\n"
           "| --- | --- | --- | --- | --- | --- |\n" + "".join(tails))
    return rc, ran


def main(argv: Sequence[str] | None = None) -> int:
    try:
        a = parse_args(argv)
        ks = {} if a.reuse else kernels(a.flavour)
        if not a.reuse and not (PROJECT / "build" / "ptwalk").is_file():
            raise BadInput("build/ptwalk is not built (make build)")
        a.out.mkdir(parents=True, exist_ok=True)
        if not a.reuse:
            _write(a.out / "plan.txt", "\n".join(plan_lines(a)) + "\n")
            cmds = boot_commands(a, ks)
            if a.dry_run:
                for side, c in cmds:
                    print(f"{side}: {_shell(c)}")
                print(f"plan: {a.out / 'plan.txt'}: {len(cells())} cells x {a.runs} runs")
                return 0
            rcs = run_boots(a, cmds)
        else:
            rcs = {}
            for s, _, _ in sides(a):
                if not side_dir(a.out, s).is_dir():
                    raise BadInput(f"--reuse: no result set {side_dir(a.out, s)}")
        rc, ran = evaluate(a)
    except (BadInput, res.InputError) as e:
        print(f"cross-version: error: {e}", file=sys.stderr)
        return 2
    args = sys.argv[1:] if argv is None else argv
    me = [sys.executable, str(Path(__file__).resolve())] + list(args)
    # appended: a set made in steps keeps every step's commands
    cmds_file = a.out / "commands.sh"
    head = "" if cmds_file.exists() else (
        "#!/bin/sh\n# the commands that made this set, as run, from the project root\n")
    with open(cmds_file, "a", encoding="utf-8") as f:
        f.write(head + f"# {'compare only' if a.reuse else 'boots, runs and compares'}\n"
                + _shell(me) + "\n" + "".join(f"#   ran: {c}\n" for c in ran))
    bad = {s: r for s, r in rcs.items() if r != 0}
    for s, r in bad.items():
        print(f"cross-version: {s}: exit {r} (log {a.out / 'logs' / (s + '.log')})",
              file=sys.stderr)
    print(f"cross-version: {len(json.loads((a.out / 'flagged.json').read_text()))} flagged "
          f"rows; {a.out / 'flagged.md'}")
    return 1 if bad or rc else 0


if __name__ == "__main__":
    sys.exit(main())
