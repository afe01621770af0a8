#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Writes scripts/ptwalk_report/walk_kinds.py from the one definition of the
walk kinds and scanner profiles, userspace/model/include/ptwalk/walk_kinds.def
(the C++ library includes it). --check: exit 1 when the written module
differs from what the definition gives (scripts/tests/test_walk_kinds.py)."""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEF = REPO / "userspace" / "model" / "include" / "ptwalk" / "walk_kinds.def"
OUT = REPO / "scripts" / "ptwalk_report" / "walk_kinds.py"


@dataclass(frozen=True)
class Kind:
    name: str
    module: str | None
    lock_mode: str
    lock_unit: str
    file: str


@dataclass(frozen=True)
class Table:
    kinds: tuple[Kind, ...]
    profiles: tuple[tuple[str, tuple[str, ...]], ...]  # several kinds each


def _body(text: str, name: str) -> str:
    text = re.sub(r"\\\n", " ", text)
    m = re.search(rf"^#define\s+{name}\(X\)\s+(.*)$", text, re.M)
    if not m:
        raise ValueError(f"{DEF.name}: no #define {name}(X)")
    return m.group(1)


def parse(text: str) -> Table:
    kinds = tuple(Kind(n, None if m == "none" else m, mode, unit, f) for n, m, mode, unit, f in
                  re.findall(r"\bX\((\w+),\s*(\w+),\s*(\w+),\s*(\w+),\s*(\w+),",
                             _body(text, "PTW_WALK_KINDS")))
    if not kinds:
        raise ValueError(f"{DEF.name}: PTW_WALK_KINDS lists nothing")
    names = {k.name for k in kinds}
    profiles = []
    for args in re.findall(r"\bX\(([\w\s,]+)\)", _body(text, "PTW_PROFILES")):
        p, *walks = [a.strip() for a in args.split(",")]
        unknown = [w for w in walks if w not in names]
        if p in names or not walks or unknown:
            raise ValueError(f"{DEF.name}: profile {p}: a kind's name, no kinds or "
                             f"unknown kinds {unknown}")
        profiles.append((p, tuple(walks)))
    return Table(kinds, tuple(profiles))


def render(t: Table) -> str:
    modes = sorted({k.lock_mode for k in t.kinds})
    units = list(dict.fromkeys(k.lock_unit for k in t.kinds))
    out = [
        "# SPDX-License-Identifier: GPL-2.0",
        '"""Walk kinds and scanner profiles, written by scripts/gen_walk_kinds.py',
        "from their one definition, userspace/model/include/ptwalk/walk_kinds.def:",
        "do not edit (scripts/tests/test_walk_kinds.py fails when it drifts).",
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
        *(f'    {n} = "{n}"' for n in [k.name for k in t.kinds] + [p for p, _ in t.profiles]),
        "",
        "",
        "class LockMode(enum.Enum):",
        *(f'    {m} = "{m}"' for m in modes),
        "",
        "",
        "class LockUnit(enum.Enum):",
        *(f'    {u} = "{u}"' for u in units),
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
        "# the kinds a profile walks, in order, per interval",
        "PROFILE_WALKS: dict[Profile, tuple[WalkKind, ...]] = {",
        *(f"    Profile.{k.name}: (WalkKind.{k.name},)," for k in t.kinds),
        *(f"    Profile.{p}: ({', '.join(f'WalkKind.{w}' for w in ws)}),"
          for p, ws in t.profiles),
        "}",
        "",
        "",
        "def profile_walks(profile: str) -> tuple[str, ...]:",
        '    """The names of the kinds a profile walks; ValueError for an unknown one."""',
        "    return tuple(k.value for k in PROFILE_WALKS[Profile(profile)])",
        "",
    ]
    return "\n".join(out)


def main(argv: list[str]) -> int:
    want = render(parse(DEF.read_text(encoding="utf-8")))
    if argv[1:] == ["--check"]:
        if OUT.read_text(encoding="utf-8") != want:
            print(f"{OUT.relative_to(REPO)} differs from {DEF.relative_to(REPO)}: "
                  f"run scripts/gen_walk_kinds.py", file=sys.stderr)
            return 1
        return 0
    if argv[1:]:
        print("usage: gen_walk_kinds.py [--check]", file=sys.stderr)
        return 2
    OUT.write_text(want, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
