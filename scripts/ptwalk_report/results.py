"""Load ptwalk result documents (ptwalk.result/1) into typed Results
(result_types.py) and turn a set of them into per-scenario samples. Works
offline on saved files (.json, .json.gz)."""
from __future__ import annotations

import gzip
import json
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from . import SCHEMA, hist
from .result_types import (Backend, Backing, InputError, KindEstimate, Latency,  # noqa: F401
                           MeasuredOn, Result, ResultError, SelfMemory, Stall, VictimName,
                           Walk, parse)
from .walk_kinds import Profile, WalkKind  # noqa: F401


@functools.total_ordering
@dataclass(frozen=True)
class ScenarioKey:
    profile: Profile
    backing: Backing
    size_bytes: int
    victims: tuple[VictimName, ...]

    def _order(self) -> tuple[str, str, int, tuple[str, ...]]:
        return (self.profile.value, self.backing.value, self.size_bytes,
                tuple(v.value for v in self.victims))

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, ScenarioKey):
            return NotImplemented
        return self._order() < other._order()

    def __str__(self) -> str:
        v = ",".join(x.value for x in self.victims) or "none"
        return f"{self.profile.value}/{self.backing.value}/{human_size(self.size_bytes)}/{v}"


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
    named explicitly must be a ptwalk result. A result that does not parse
    raises ResultError (an InputError) naming the file and the member."""
    out: list[Result] = []
    for a in args:
        p = Path(a)
        if p.is_dir():
            for f in sorted(x for x in p.rglob("*") if x.is_file() and _is_result_name(x)):
                doc = _read(f)
                if doc.get("schema") == SCHEMA:
                    out.append(parse(f, doc))
        elif p.is_file():
            doc = _read(p)
            if doc.get("schema") != SCHEMA:
                raise InputError(f"{p}: schema is {doc.get('schema')!r}, want {SCHEMA!r}")
            out.append(parse(p, doc))
        else:
            raise InputError(f"{p}: no such file or directory")
    if strict and not out:
        raise InputError(f"no {SCHEMA} documents in {' '.join(map(str, args))}")
    return out


def scenario_key(r: Result) -> ScenarioKey:
    s = r.scenario
    return ScenarioKey(s.profile, s.backing, s.size_bytes,
                       tuple(sorted(s.victims, key=lambda v: v.value)))


def group(results: Iterable[Result]) -> dict[ScenarioKey, list[Result]]:
    g: dict[ScenarioKey, list[Result]] = {}
    for r in results:
        g.setdefault(scenario_key(r), []).append(r)
    return dict(sorted(g.items()))


def good_walks(r: Result) -> list[Walk]:
    """Walks whose cost is the mapping's: not failed, and not "incomplete"
    (a 6.1 smaps_rollup that skipped VMAs after yielding mmap_lock)."""
    return r.good_walks()


@dataclass
class Metric:
    name: str
    unit: str            # "ns/PTE" or "ns"
    per: str             # what one sample is: "walk" or "run"
    samples: list[float] = field(default_factory=list)
    pooled: float | None = None   # quantile of the merged histogram, if any


# (label, the Latency member, quantile)
VICTIM_QUANTILES = (("p99", "p99_ns", 0.99), ("p99.9", "p999_ns", 0.999), ("max", "max_ns", 1.0))


def metrics(runs: list[Result]) -> dict[str, Metric]:
    """Samples of every compared metric for the runs of one scenario."""
    m: dict[str, Metric] = {}

    def add(name: str, unit: str, per: str, value: float | None) -> None:
        if value is None:
            return
        m.setdefault(name, Metric(name, unit, per)).samples.append(float(value))

    for r in runs:
        for w in good_walks(r):
            k = w.kind.value
            add(f"walk {k} ns/PTE", "ns/PTE", "walk", w.ns_per_pte)
            add(f"walk {k} lock hold", "ns", "walk", w.lock_hold_ns)
            add(f"walk {k} max stall", "ns", "walk", w.max_stall_ns)
        for vname, v in sorted(r.victims.items(), key=lambda x: x[0].value):
            if not v.during.count:
                continue
            for label, key, _ in VICTIM_QUANTILES:
                add(f"{vname.value} {label} during walks", "ns", "run", v.during.quantile(key))
    for vname in sorted({v for r in runs for v in r.victims}, key=lambda v: v.value):
        merged = hist.merge(list(r.victims[vname].during.buckets)
                            for r in runs if vname in r.victims)
        for label, _, q in VICTIM_QUANTILES:
            name = f"{vname.value} {label} during walks"
            if name in m:
                m[name].pooled = hist.quantile(merged, q)
    return m


def victim_hist(runs: list[Result], victim: VictimName, phase: str) -> list[list[int]]:
    """The merged histogram of a victim's `outside` or `during` operations."""
    def lat(r: Result) -> Latency:
        v = r.victims[victim]
        return v.during if phase == "during" else v.outside
    return hist.merge([list(b) for b in lat(r).buckets] for r in runs if victim in r.victims)
