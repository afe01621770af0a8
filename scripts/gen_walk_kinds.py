#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Writes scripts/ptwalk_report/walk_kinds.py from the one definition of the
walk kinds and scanner profiles, userspace/model/include/ptwalk/walk_kinds.def,
and of the lock modes, userspace/os/include/ptwalk/lock_modes.def, and
scripts/ptwalk_report/result_enums.py from that of the results' other
enumerations, userspace/model/include/ptwalk/result_enums.def (the C++
library includes all three). --check: exit 1 when a written module differs
from what the definitions give (scripts/tests/test_walk_kinds.py)."""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEF = REPO / "userspace" / "model" / "include" / "ptwalk" / "walk_kinds.def"
LOCK_MODES_DEF = REPO / "userspace" / "os" / "include" / "ptwalk" / "lock_modes.def"
OUT = REPO / "scripts" / "ptwalk_report" / "walk_kinds.py"
ENUMS_DEF = REPO / "userspace" / "model" / "include" / "ptwalk" / "result_enums.def"
ENUMS_OUT = REPO / "scripts" / "ptwalk_report" / "result_enums.py"


@dataclass(frozen=True)
class Kind:
    name: str
    module: str | None
    lock_mode: str
    lock_unit: str
    file: str


@dataclass(frozen=True)
class Change:
    name: str
    before: str
    since: str
    lock_mode: str
    lock_unit: str


@dataclass(frozen=True)
class Table:
    kinds: tuple[Kind, ...]
    profiles: tuple[tuple[str, tuple[str, ...]], ...]  # several kinds each
    lock_modes: tuple[tuple[str, str], ...]  # (the C++ LockMode, its name in results)
    changes: tuple[Change, ...] = ()  # PTW_LOCK_CHANGES
    units: tuple[tuple[str, str], ...] = ()  # PTW_LOCK_UNITS: (name, text)
    monitors: tuple[str, ...] = ()  # PTW_KERNEL_MONITORS: profiles that walk nothing


def _body(text: str, name: str, where: Path = DEF) -> str:
    text = re.sub(r"\\\n", " ", text)
    m = re.search(rf"^#define\s+{name}\(X\)\s+(.*)$", text, re.M)
    if not m:
        raise ValueError(f"{where.name}: no #define {name}(X)")
    return m.group(1)


def parse_lock_modes(text: str) -> tuple[tuple[str, str], ...]:
    modes = tuple(re.findall(r'\bX\((\w+),\s*"([^"]+)"\)',
                             _body(text, "PTW_LOCK_MODE_NAMES", LOCK_MODES_DEF)))
    names = [n for _, n in modes]
    if "none" not in names or any(not n.replace("+", "_").isidentifier() for n in names):
        raise ValueError(f"{LOCK_MODES_DEF.name}: PTW_LOCK_MODE_NAMES lists no none, or a "
                         f"name that is no identifier with + as _: {names}")
    return modes


def parse(text: str, lock_modes_text: str | None = None) -> Table:
    lock_modes = parse_lock_modes(LOCK_MODES_DEF.read_text(encoding="utf-8")
                                  if lock_modes_text is None else lock_modes_text)
    kinds = tuple(Kind(n, None if m == "none" else m, mode, unit, f) for n, m, mode, unit, f in
                  re.findall(r"\bX\((\w+),\s*(\w+),\s*(\w+),\s*(\w+),\s*(\w+),",
                             _body(text, "PTW_WALK_KINDS")))
    if not kinds:
        raise ValueError(f"{DEF.name}: PTW_WALK_KINDS lists nothing")
    bad_modes = [k.name for k in kinds if k.lock_mode not in dict(lock_modes)]
    if bad_modes:
        raise ValueError(f"{DEF.name}: kinds {bad_modes}: a mode lock_modes.def does not list")
    names = {k.name for k in kinds}
    profiles = []
    for args in re.findall(r"\bX\(([\w\s,]+)\)", _body(text, "PTW_PROFILES")):
        p, *walks = [a.strip() for a in args.split(",")]
        unknown = [w for w in walks if w not in names]
        if p in names or not walks or unknown:
            raise ValueError(f"{DEF.name}: profile {p}: a kind's name, no kinds or "
                             f"unknown kinds {unknown}")
        profiles.append((p, tuple(walks)))
    monitors = tuple(re.findall(r'\bX\((\w+),\s*"', _body(text, "PTW_KERNEL_MONITORS")))
    clash = [m for m in monitors if m in names or m in {p for p, _ in profiles}]
    if not monitors or clash:
        raise ValueError(f"{DEF.name}: PTW_KERNEL_MONITORS lists nothing, or names {clash} "
                         "a kind or profile has")
    changes = tuple(Change(*c) for c in re.findall(
        r'\bX\((\w+),\s*"(\d+\.\d+)",\s*"(\d+\.\d+)",\s*(\w+),\s*(\w+),',
        _body(text, "PTW_LOCK_CHANGES")))
    bad = [c.name for c in changes if c.name not in names or c.lock_mode not in dict(lock_modes)]
    if bad:
        raise ValueError(f"{DEF.name}: PTW_LOCK_CHANGES {bad}: an unknown kind or mode")
    units = tuple(re.findall(r'\bX\((\w+),\s*"([^"]+)"\)', _body(text, "PTW_LOCK_UNITS")))
    unknown = sorted(({k.lock_unit for k in kinds} | {c.lock_unit for c in changes})
                     - {u for u, _ in units})
    if not units or unknown:
        raise ValueError(f"{DEF.name}: PTW_LOCK_UNITS lists nothing, or not the units "
                         f"{unknown} the kinds use")
    return Table(kinds, tuple(profiles), lock_modes, changes, units, monitors)


def render(t: Table) -> str:
    # the kinds' modes, in the order of the lock modes' list
    used = {k.lock_mode for k in t.kinds} | {c.lock_mode for c in t.changes}
    modes = [(m, n) for m, n in t.lock_modes if m in used]
    out = [
        "# SPDX-License-Identifier: GPL-2.0",
        '"""Walk kinds, scanner profiles and lock modes, written by',
        "scripts/gen_walk_kinds.py from their one definition,",
        "userspace/model/include/ptwalk/walk_kinds.def and (the lock modes)",
        "userspace/os/include/ptwalk/lock_modes.def: do not edit",
        "(scripts/tests/test_walk_kinds.py fails when it drifts).",
        'Text becomes a member here: WalkKind("smaps") raises ValueError for an',
        'unknown name."""',
        "from __future__ import annotations",
        "",
        "import enum",
        "from dataclasses import dataclass",
        "",
        "",
        "class WalkKind(enum.Enum):",
        *(f'    {k.name} = "{k.name}"' for k in t.kinds),
        "",
        "",
        "class Profile(enum.Enum):",
        *(f'    {n} = "{n}"' for n in [k.name for k in t.kinds] + [p for p, _ in t.profiles]
          + list(t.monitors)),
        "",
        "",
        "class LockMode(enum.Enum):",
        '    """How a walk kind takes mmap_lock, and how one hold or wait does."""',
        *(f'    {m} = "{n}"' for m, n in modes),
        "",
        "",
        "class WalkLockMode(enum.Enum):",
        '    """How a walk took mmap_lock (the C++ LockMode): as a LockMode, both',
        "    ways or not at all (a module walk without a hold, or a kind summary",
        '    whose first walk had none; writers before the C++ LockMode wrote ""',
        '    there, which reads as none)."""',
        *(f'    {n.replace("+", "_")} = "{n}"' for _, n in t.lock_modes),
        "",
        "    @classmethod",
        "    def _missing_(cls, value: object) -> WalkLockMode | None:",
        '        return cls.none if value == "" else None',
        "",
        "",
        "class LockUnit(enum.Enum):",
        '    """What one hold of mmap_lock covers in a walk (PTW_LOCK_UNITS)."""',
        *(f'    {u} = "{u}"' for u, _ in t.units),
        "",
        "",
        '# how tables name each unit ("lock held per"), as ptwalk run and locking do',
        "UNIT_TEXT: dict[LockUnit, str] = {",
        *(f'    LockUnit.{u}: "{x}",' for u, x in t.units),
        "}",
        "",
        "",
        "@dataclass(frozen=True)",
        "class KindFacts:",
        "    module: str | None  # ptwalk.ko's kind (PTW_KINDS), None when none sees it",
        "    lock_mode: LockMode",
        "    lock_unit: LockUnit",
        "    file: str  # the /proc/PID file it reads or writes",
        "",
        "",
        "# in the order tables and verdicts list them",
        "FACTS: dict[WalkKind, KindFacts] = {",
        *(f"    WalkKind.{k.name}: KindFacts(\n"
          f"        {f'{chr(34)}{k.module}{chr(34)}' if k.module else None}, "
          f"LockMode.{k.lock_mode}, LockUnit.{k.lock_unit}, \"{k.file}\"),"
          for k in t.kinds),
        "}",
        "",
        "",
        "@dataclass(frozen=True)",
        "class LockChange:",
        '    """A kind\'s locking from release `since` on (PTW_LOCK_CHANGES: as',
        "    FACTS up to `before`; releases between were neither read nor",
        '    measured)."""',
        "    before: str",
        "    since: str",
        "    lock_mode: LockMode",
        "    lock_unit: LockUnit",
        "",
        "",
        "LOCK_CHANGES: dict[WalkKind, LockChange] = {",
        *(f'    WalkKind.{c.name}: LockChange("{c.before}", "{c.since}", '
          f"LockMode.{c.lock_mode}, LockUnit.{c.lock_unit}),"
          for c in t.changes),
        "}",
        "",
        "# the kinds a profile walks, in order, per interval",
        "PROFILE_WALKS: dict[Profile, tuple[WalkKind, ...]] = {",
        *(f"    Profile.{k.name}: (WalkKind.{k.name},)," for k in t.kinds),
        *(f"    Profile.{p}: ({', '.join(f'WalkKind.{w}' for w in ws)}),"
          for p, ws in t.profiles),
        *(f"    Profile.{m}: ()," for m in t.monitors),
        "}",
        "",
        "",
        "def profile_walks(profile: str) -> tuple[str, ...]:",
        '    """The names of the kinds a profile walks; ValueError for an unknown one."""',
        "    return tuple(k.value for k in PROFILE_WALKS[Profile(profile)])",
        "",
    ]
    return "\n".join(out)


@dataclass(frozen=True)
class ResultEnums:
    backends: tuple[tuple[str, bool, bool], ...]  # (name, run uses it, monitor does)
    # (the Python class, its docstring, ((member, its text in the JSON), ...))
    lists: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...]


# result_enums.def's lists of plain names: (macro, Python class, docstring)
PLAIN_LISTS = (
    ("PTW_BACKINGS", "Backing", "The scenario's memory (scenario.backing)."),
    ("PTW_VICTIMS", "VictimName", "A victim (scenario.victims, victims' keys, a stall's victim)."),
    ("PTW_FAULT_REGIONS", "FaultRegion", "Where the fault victim maps (scenario.fault_region)."),
    ("PTW_ESTIMATE_STATUSES", "EstimateStatus",
     "How a kind's stall estimate was made (stall_estimate.kinds.KIND.status)."),
    ("PTW_MONITOR_BASES", "MonitorBasis",
     "How the monitor knows a walk's target (a hold's target.basis)."),
)


def parse_result_enums(text: str) -> ResultEnums:
    backends = tuple((n, r == "1", m == "1") for n, r, m in
                     re.findall(r"\bX\((\w+),\s*([01]),\s*([01])\)",
                                _body(text, "PTW_BACKENDS", ENUMS_DEF)))
    if not backends:
        raise ValueError(f"{ENUMS_DEF.name}: PTW_BACKENDS lists nothing")
    lists = []
    for macro, cls, doc in PLAIN_LISTS:
        names = tuple(re.findall(r"\bX\((\w+)\)", _body(text, macro, ENUMS_DEF)))
        if not names:
            raise ValueError(f"{ENUMS_DEF.name}: {macro} lists nothing")
        lists.append((cls, doc, tuple((n, n) for n in names)))
    sources = tuple(re.findall(r'\bX\((\w+),\s*"([^"]+)"\)',
                               _body(text, "PTW_MEASURED_STALL_SOURCES", ENUMS_DEF)))
    if not sources:
        raise ValueError(f"{ENUMS_DEF.name}: PTW_MEASURED_STALL_SOURCES lists nothing")
    lists.append(("MeasuredStallSource",
                  "Where a kind's measured stall is from (measured_stall_source).",
                  sources))
    for cls, _, members in lists + [("Backend", "", tuple((n, n) for n, _, _ in backends))]:
        n = len(members)
        if len({m for m, _ in members}) != n or len({t for _, t in members}) != n:
            raise ValueError(f"{ENUMS_DEF.name}: {cls}: a name or text listed twice")
    return ResultEnums(backends, tuple(lists))


def _enum(cls: str, doc: str, members: tuple[tuple[str, str], ...]) -> list[str]:
    return ["", "", f"class {cls}(enum.Enum):", f'    """{doc}"""',
            *(f'    {m} = "{t}"' for m, t in members)]


def render_result_enums(e: ResultEnums) -> str:
    out = [
        "# SPDX-License-Identifier: GPL-2.0",
        '"""The enumerations of ptwalk\'s results and of the monitor\'s JSON beyond',
        "the walk kinds, lock modes and units of walk_kinds.py, written by",
        "scripts/gen_walk_kinds.py from their one definition,",
        "userspace/model/include/ptwalk/result_enums.def: do not edit",
        "(scripts/tests/test_walk_kinds.py fails when it drifts). Each member's",
        'value is its text in the JSON (results/SCHEMA.md)."""',
        "from __future__ import annotations",
        "",
        "import enum",
    ]
    out += _enum("Backend", "The kernel view a result was measured with (backend).",
                 tuple((n, n) for n, run, _ in e.backends if run))
    out += _enum("MonitorBackend", "The kernel view of a monitor's JSON (backend).",
                 tuple((n, n) for n, _, mon in e.backends if mon))
    for cls, doc, members in e.lists:
        out += _enum(cls, doc, members)
    return "\n".join(out) + "\n"


def outputs() -> list[tuple[Path, Path, str]]:
    """(module, its definition, what the definitions give)."""
    return [(OUT, DEF, render(parse(DEF.read_text(encoding="utf-8")))),
            (ENUMS_OUT, ENUMS_DEF,
             render_result_enums(parse_result_enums(ENUMS_DEF.read_text(encoding="utf-8"))))]


def main(argv: list[str]) -> int:
    if argv[1:] == ["--check"]:
        rc = 0
        for out, src, want in outputs():
            if out.read_text(encoding="utf-8") != want:
                print(f"{os.path.relpath(out, REPO)} differs from "
                      f"{os.path.relpath(src, REPO)}: run scripts/gen_walk_kinds.py",
                      file=sys.stderr)
                rc = 1
        return rc
    if argv[1:]:
        print("usage: gen_walk_kinds.py [--check]", file=sys.stderr)
        return 2
    for out, _, want in outputs():
        out.write_text(want, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
