"""Load ptwalk result documents (ptwalk.result/1) and turn a set of them
into per-scenario samples. Works offline on saved files (.json, .json.gz)."""
from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from . import SCHEMA, hist


class InputError(Exception):
    """Bad input: the CLI prints it on one line and exits 2."""


@dataclass
class Result:
    path: Path
    doc: dict[str, Any]

    @property
    def usable(self) -> bool:
        return bool(self.doc.get("complete")) and "error" not in self.doc

    @property
    def release(self) -> str:
        return str(self.doc.get("kernel", {}).get("release", "?"))

    @property
    def backend(self) -> str:
        return str(self.doc.get("backend", "?"))

    @property
    def measured_on(self) -> MeasuredOn:
        """How the figures were clocked: a ptwalk-vm guest's accelerator,
        clock mode and QEMU (host.vm), or the machine itself."""
        vm = self.doc.get("host", {}).get("vm")
        if not isinstance(vm, dict):
            return MeasuredOn()
        return MeasuredOn(vm=True, accel=str(vm.get("accel")), clock=str(vm.get("clock")),
                          qemu=str(vm.get("qemu")))


@dataclass(frozen=True, order=True)
class MeasuredOn:
    vm: bool = False
    accel: str = ""
    clock: str = ""
    qemu: str = ""

    def __str__(self) -> str:
        if not self.vm:
            return "no VM (the machine's own clock)"
        return f"VM: accel {self.accel}, clock {self.clock}, QEMU {self.qemu}"


@dataclass(frozen=True, order=True)
class ScenarioKey:
    profile: str
    backing: str
    size_bytes: int
    victims: tuple[str, ...]

    def __str__(self) -> str:
        v = ",".join(self.victims) or "none"
        return f"{self.profile}/{self.backing}/{human_size(self.size_bytes)}/{v}"


def human_size(n: float) -> str:
    for unit, div in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= div:
            v = n / div
            return f"{v:.0f}{unit}" if v == int(v) else f"{v:.1f}{unit}"
    return f"{int(n)}"


def _is_result_name(p: Path) -> bool:
    return p.name.endswith(".json") or p.name.endswith(".json.gz")


def _read(path: Path) -> dict[str, Any]:
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8") as f:
                doc = json.load(f)
        else:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
    except (OSError, ValueError, EOFError) as e:
        raise InputError(f"{path}: cannot read result: {e}") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}: not a JSON object")
    return doc


def load(args: Iterable[str | Path], *, strict: bool = True) -> list[Result]:
    """Results from files and directories (searched recursively). In a
    directory, JSON files of another schema (summaries) are skipped; a file
    named explicitly must be a ptwalk result."""
    out: list[Result] = []
    for a in args:
        p = Path(a)
        if p.is_dir():
            for f in sorted(x for x in p.rglob("*") if x.is_file() and _is_result_name(x)):
                doc = _read(f)
                if doc.get("schema") == SCHEMA:
                    out.append(Result(f, doc))
        elif p.is_file():
            doc = _read(p)
            if doc.get("schema") != SCHEMA:
                raise InputError(f"{p}: schema is {doc.get('schema')!r}, want {SCHEMA!r}")
            out.append(Result(p, doc))
        else:
            raise InputError(f"{p}: no such file or directory")
    if strict and not out:
        raise InputError(f"no {SCHEMA} documents in {' '.join(map(str, args))}")
    for r in out:
        for member in ("scenario", "walks", "victims"):
            if member not in r.doc:
                raise InputError(f"{r.path}: missing '{member}'")
    return out


def scenario_key(r: Result) -> ScenarioKey:
    s = r.doc["scenario"]
    return ScenarioKey(str(s.get("profile", "?")), str(s.get("backing", "?")),
                       int(s.get("size_bytes", 0)), tuple(sorted(s.get("victims", []))))


def group(results: Iterable[Result]) -> dict[ScenarioKey, list[Result]]:
    g: dict[ScenarioKey, list[Result]] = {}
    for r in results:
        g.setdefault(scenario_key(r), []).append(r)
    return dict(sorted(g.items()))


def good_walks(r: Result) -> list[dict[str, Any]]:
    """Walks whose cost is the mapping's: not failed, and not "incomplete"
    (a 6.1 smaps_rollup that skipped VMAs after yielding mmap_lock)."""
    return [w for w in r.doc.get("walks", [])
            if "error" not in w and "incomplete" not in w and w.get("ptes")]


@dataclass
class Metric:
    name: str
    unit: str            # "ns/PTE" or "ns"
    per: str             # what one sample is: "walk" or "run"
    samples: list[float] = field(default_factory=list)
    pooled: float | None = None   # quantile of the merged histogram, if any


VICTIM_QUANTILES = (("p99", "p99_ns", 0.99), ("p99.9", "p999_ns", 0.999), ("max", "max_ns", 1.0))


def metrics(runs: list[Result]) -> dict[str, Metric]:
    """Samples of every compared metric for the runs of one scenario."""
    m: dict[str, Metric] = {}

    def add(name: str, unit: str, per: str, value: Any) -> None:
        if value is None:
            return
        m.setdefault(name, Metric(name, unit, per)).samples.append(float(value))

    for r in runs:
        for w in good_walks(r):
            k = w["kind"]
            add(f"walk {k} ns/PTE", "ns/PTE", "walk", w.get("ns_per_pte"))
            add(f"walk {k} lock hold", "ns", "walk", w.get("lock_hold_ns"))
            add(f"walk {k} max stall", "ns", "walk", w.get("max_stall_ns"))
        for vname, v in sorted(r.doc.get("victims", {}).items()):
            during = v.get("during", {})
            if not during.get("count"):
                continue
            for label, key, _ in VICTIM_QUANTILES:
                add(f"{vname} {label} during walks", "ns", "run", during.get(key))
    for vname in sorted({v for r in runs for v in r.doc.get("victims", {})}):
        merged = hist.merge(r.doc["victims"][vname].get("during", {}).get("buckets", [])
                            for r in runs if vname in r.doc.get("victims", {}))
        for label, _, q in VICTIM_QUANTILES:
            name = f"{vname} {label} during walks"
            if name in m:
                m[name].pooled = hist.quantile(merged, q)
    return m


def victim_hist(runs: list[Result], victim: str, phase: str) -> list[list[int]]:
    return hist.merge(r.doc["victims"][victim].get(phase, {}).get("buckets", [])
                      for r in runs if victim in r.doc.get("victims", {}))
