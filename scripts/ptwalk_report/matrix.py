"""The qualification matrix (scripts/qualify/matrix.json): which scenarios
run, at which size, and where their results go:

  results/<host>/<kernel-release>/<UTC timestamp>/
      runs/<profile>-<backing>-<size>-r<N>.json   one ptwalk result per run
      commands.txt                                the exact command lines
      junit.xml, summary.json, report/report.md + PNGs

Cost across sizes: besides the main size (repeats, for ptwalk compare) the
"sweep" block runs each of its profiles once at further sizes, so that every
walk kind spans at least two decades of entries; the report fits duration
and worst stall against entries over all of them.
"""
from __future__ import annotations

import json
import os
import platform
import shlex
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import walk_kinds

MIB = 1 << 20
GIB = 1 << 30
REPO = Path(__file__).resolve().parents[2]
MATRIX = REPO / "scripts" / "qualify" / "matrix.json"


@dataclass(frozen=True)
class Scenario:
    profile: str
    backing: str
    size_mib: int
    victims: tuple[str, ...]
    interval: str
    duration_ms: int
    repeat: int
    physical_mib: int = 0    # alias backing only
    calibrate_mib: int = 0   # alias backing only
    incident: bool = False   # the incident-scale block of the matrix
    sweep: bool = False      # one size of the cost-across-sizes sweep

    @property
    def id(self) -> str:
        return f"{self.profile}-{self.backing}-{self.size_mib}M-r{self.repeat}"

    def argv(self, ptwalk: str, out: Path) -> list[str]:
        a = [ptwalk, "run", "--size", f"{self.size_mib}M", "--backing", self.backing,
             "--scanner", self.profile, "--interval", self.interval,
             "--duration", f"{self.duration_ms}ms", "--victims", ",".join(self.victims)]
        if self.backing == "alias":
            a += ["--physical", f"{self.physical_mib}M",
                  "--calibrate-size", f"{self.calibrate_mib}M" if self.calibrate_mib else "0"]
        return a + ["--quiet", "--out", str(out)]


def load_matrix(path: Path = MATRIX) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def mode_from_env(env: dict[str, str] | None = None) -> str:
    env = dict(os.environ) if env is None else env
    if env.get("FULL", "0") not in ("", "0"):
        return "full"
    if env.get("QUICK", "0") not in ("", "0"):
        return "quick"
    return "default"


def mem_available() -> int:
    with open("/proc/meminfo", encoding="ascii") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no MemAvailable in /proc/meminfo")


def run_estimate_s(m: dict[str, Any], duration_ms: float, size_mib: float) -> float:
    return (m["overhead_s"] + duration_ms / 1000.0
            + 2.0 * m["populate_s_per_gib"] * size_mib / 1024.0)


def estimate_s(m: dict[str, Any], mode: str, size_mib: int, runs: int) -> float:
    return runs * run_estimate_s(m, m["modes"][mode]["duration_ms"], size_mib)


def sweep_sizes(m: dict[str, Any], mode: str, avail_bytes: int,
                backing: str = "anon") -> list[int]:
    """The sweep's sizes for a backing on this host (the mode's
    sizes_mib_by_backing, else sizes_mib): those within mem_fraction of
    MemAvailable."""
    sw = m.get("sweep", {}).get("modes", {}).get(mode)
    if not sw:
        return []
    cap = int(avail_bytes * m["mem_fraction"]) // MIB
    sizes = sw.get("sizes_mib_by_backing", {}).get(backing, sw["sizes_mib"])
    return [s for s in sizes if s <= cap]


def sweep(m: dict[str, Any], mode: str, avail_bytes: int, main_mib: int = 0) -> list[Scenario]:
    """One run per sweep profile, backing and size (the main size is left to
    the main matrix, whose repeats cover it)."""
    sw = m.get("sweep")
    if not sw or mode not in sw.get("modes", {}):
        return []
    md = sw["modes"][mode]
    return [Scenario(p, b, s, tuple(m["victims"]), md["interval"], md["duration_ms"], 1,
                     sweep=True)
            for p in sw["profiles"] for b in sw["backings"]
            for s in sweep_sizes(m, mode, avail_bytes, b) if s != main_mib]


def sweep_estimate_s(m: dict[str, Any], scs: list[Scenario]) -> float:
    return sum(run_estimate_s(m, s.duration_ms, s.size_mib) for s in scs if s.sweep)


THP_LEAF_MIB = 2   # a PMD leaf of a THP mapping


def entries_span(scs: list[Scenario], base_entries: int) -> dict[tuple[str, str], float]:
    """Largest / smallest expected entries per (walk kind, backing): on
    4 KiB backings size / 4 KiB plus the target process's own base_entries;
    on thp the mapping's PMD leaves alone (size / 2 MiB: the process's own
    ~600-900 PTEs would swamp them, so walk-cost-fit fits THP walks against
    PMD leaves, the 4 KiB PTEs being part of the fixed cost). Aliased runs
    are a backing of their own (their cost per PTE differs)."""
    sizes: dict[tuple[str, str], list[int]] = {}
    for s in scs:
        if s.backing in ("anon", "shmem", "alias", "thp"):
            for k in walk_kinds.profile_walks(s.profile):
                sizes.setdefault((k, s.backing), []).append(s.size_mib)
    out = {}
    for (k, b), v in sizes.items():
        if b == "thp":
            out[(k, b)] = max(v) // THP_LEAF_MIB / max(min(v) // THP_LEAF_MIB, 1)
        else:
            out[(k, b)] = (max(v) * 256 + base_entries) / (min(v) * 256 + base_entries)
    return out


def choose_size(m: dict[str, Any], mode: str, avail_bytes: int, runs: int) -> int:
    md = m["modes"][mode]
    cap = min(md["max_size_mib"], int(avail_bytes * m["mem_fraction"]) // MIB)
    size = m["min_size_mib"]
    while size * 2 <= cap:
        size *= 2
    budget = md.get("time_budget_s")
    while budget and size > m["min_size_mib"] and estimate_s(m, mode, size, runs) > budget:
        size //= 2
    return size


def incident(m: dict[str, Any], mode: str, avail_bytes: int) -> list[Scenario]:
    """Incident-scale scenarios: distinct pages when they fit, else aliased."""
    inc = m.get("incident")
    if not inc or mode not in inc["modes"]:
        return []
    md = inc["modes"][mode]
    size = inc["size_mib"]
    # 8 bytes of PTE per 4 KiB page on top of the pages themselves
    distinct_fits = size * MIB * (1 + 1 / 512) <= avail_bytes * m["mem_fraction"]
    backing = "anon" if distinct_fits else "alias"
    return [Scenario(p, backing, size, tuple(m["victims"]), md["interval"], md["duration_ms"],
                     r, inc["physical_mib"], inc["calibrate_mib"], True)
            for p in inc["profiles"] for r in range(1, md["repeats"] + 1)]


def alias_sweep(m: dict[str, Any], mode: str, avail_bytes: int) -> list[Scenario]:
    """When the incident-scale runs are aliased: each of their profiles once
    more, aliased over the same physical memory at the incident block's
    sweep_sizes_mib (uncalibrated: the fit compares aliased with aliased),
    so that the aliased walks span two decades of entries too."""
    inc = incident(m, mode, avail_bytes)
    if not inc or inc[0].backing != "alias":
        return []
    blk = m["incident"]
    sw = m.get("sweep", {}).get("modes", {}).get(mode, {})
    md = blk["modes"][mode]
    return [Scenario(p, "alias", s, tuple(m["victims"]), sw.get("interval", md["interval"]),
                     sw.get("duration_ms", md["duration_ms"]), 1, blk["physical_mib"], 0,
                     sweep=True)
            for p in blk["profiles"] for s in blk.get("sweep_sizes_mib", [])]


def select(m: dict[str, Any], mode: str, avail_bytes: int,
           size_mib: int | None = None) -> list[Scenario]:
    md = m["modes"][mode]
    combos = [(p, b) for p in m["profiles"] for b in m["backings"]]
    runs = len(combos) * md["repeats"]
    inc = incident(m, mode, avail_bytes)
    sw = sweep(m, mode, avail_bytes) + alias_sweep(m, mode, avail_bytes)
    mm = m
    if (inc or sw) and md.get("time_budget_s"):
        # the incident runs and the sweep take their share of the mode's time budget first
        mm = json.loads(json.dumps(m))
        mm["modes"][mode]["time_budget_s"] = max(
            60, md["time_budget_s"] - sweep_estimate_s(m, sw)
            - (len(inc) * m["incident"]["estimate_s"] if inc else 0))
    size = size_mib or choose_size(mm, mode, avail_bytes, runs)
    main = [Scenario(p, b, size, tuple(m["victims"]), md["interval"], md["duration_ms"], r)
            for p, b in combos for r in range(1, md["repeats"] + 1)]
    return (interleave(main, sweep(m, mode, avail_bytes, size)) + inc
            + alias_sweep(m, mode, avail_bytes))


def interleave(main: list[Scenario], extra: list[Scenario]) -> list[Scenario]:
    """The sweep's runs spread evenly between the main runs (main first): the
    sizes of a fit then share the host's changing load instead of meeting
    it at different times."""
    out: list[Scenario] = []
    k = 0
    for i, sc in enumerate(main):
        out.append(sc)
        while k < len(extra) and (k + 1) * len(main) <= (i + 1) * (len(extra) + 1):
            out.append(extra[k])
            k += 1
    return out + extra[k:]


def results_dir(root: Path, host: str | None = None, release: str | None = None,
                stamp: str | None = None) -> Path:
    host = host or socket.gethostname()
    release = release or platform.release()
    stamp = stamp or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return root / host / release / stamp


@dataclass(frozen=True)
class QualifyConfig:
    out: Path
    ptwalk: str
    mode: str
    budgets: Path


def qualify_config(env: dict[str, str] | None = None) -> QualifyConfig:
    """From the environment scripts/qualify.sh sets (defaults for a direct
    `pytest scripts/qualify`): PTWALK_QUALIFY_OUT, PTWALK_BIN, PTWALK_BUDGETS,
    QUICK / FULL."""
    env = dict(os.environ) if env is None else env
    out = env.get("PTWALK_QUALIFY_OUT")
    return QualifyConfig(
        out=Path(out) if out else results_dir(REPO / "results"),
        ptwalk=env.get("PTWALK_BIN", str(REPO / "build" / "ptwalk")),
        mode=mode_from_env(env),
        budgets=Path(env.get("PTWALK_BUDGETS", REPO / "results" / "budgets" / "default.json")))


def run_scenario(sc: Scenario, ptwalk: str, out_dir: Path,
                 timeout_s: float | None = None) -> tuple[int, Path, str]:
    """Run one scenario; returns (exit status, result path, stderr tail)."""
    runs = out_dir / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    out = runs / f"{sc.id}.json"
    argv = sc.argv(ptwalk, out)
    with open(out_dir / "commands.txt", "a", encoding="utf-8") as f:
        f.write(shlex.join(argv) + "\n")
    timeout = timeout_s or (sc.duration_ms / 1000.0 + 120.0 +
                            (2.0 if sc.backing == "alias" else 20.0) * sc.size_mib / 1024.0
                            + 10.0 * sc.calibrate_mib / 1024.0)
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, out, f"timed out after {timeout:.0f}s"
    return p.returncode, out, "\n".join(p.stderr.strip().splitlines()[-5:])


def main(argv: list[str] | None = None) -> int:
    """`python3 -m ptwalk_report.matrix outdir ROOT` prints a new results dir;
    `... plan` prints the scenarios the current mode would run."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["outdir"] and len(args) == 2:
        print(results_dir(Path(args[1])))
        return 0
    if args[:1] == ["plan"]:
        m, mode = load_matrix(), mode_from_env()
        scs = select(m, mode, mem_available())
        main_runs = [s for s in scs if not s.incident and not s.sweep]
        sw = [s for s in scs if s.sweep]
        inc = [s for s in scs if s.incident]
        est = estimate_s(m, mode, main_runs[0].size_mib, len(main_runs)) + sweep_estimate_s(m, sw)
        if inc:
            est += len(inc) * m["incident"]["estimate_s"]
        sizes = sorted({s.size_mib for s in sw})
        print(f"mode {mode}: {len(main_runs)} runs at {main_runs[0].size_mib} MiB"
              + (f" + {len(sw)} sweep runs ({', '.join(f'{x} MiB' for x in sizes)}; "
                 f"{', '.join(sorted({s.backing for s in sw}))})" if sw else "")
              + (f" + {len(inc)} incident-scale runs ({inc[0].size_mib // 1024} GiB "
                 f"{'aliased' if inc[0].backing == 'alias' else 'distinct'})" if inc else "")
              + f", estimate {est:.0f}s")
        swm = m.get("sweep", {}).get("modes", {}).get(mode, {})
        for b in m.get("sweep", {}).get("backings", []):
            dropped = [x for x in swm.get("sizes_mib_by_backing", {}).get(
                b, swm.get("sizes_mib", [])) if x not in sweep_sizes(m, mode, mem_available(), b)]
            if dropped:
                print(f"sweep: {b} {dropped} MiB left out: above {m['mem_fraction']:.0%} "
                      "of MemAvailable")
        return 0
    print("usage: python3 -m ptwalk_report.matrix outdir ROOT | plan", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
