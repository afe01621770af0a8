# SPDX-License-Identifier: GPL-2.0
"""userspace/model/include/ptwalk/walk_kinds.def is the one definition of the
walk kinds and scanner profiles, userspace/os/include/ptwalk/lock_modes.def
that of the lock modes: the C++ library includes them (their facts are
checked against module/ptwalk_abi.h at compile time), the Python tools read
scripts/ptwalk_report/walk_kinds.py, written from them. These checks fail
when the Python module drifts from them or when code lists kinds by hand
again."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import ptwalk_abi

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import gen_walk_kinds  # noqa: E402
from ptwalk_report import walk_kinds  # noqa: E402


def test_the_python_module_is_the_definitions() -> None:
    want = gen_walk_kinds.render(gen_walk_kinds.parse(gen_walk_kinds.DEF.read_text()))
    assert gen_walk_kinds.OUT.read_text() == want, "run scripts/gen_walk_kinds.py"
    assert gen_walk_kinds.main(["gen_walk_kinds.py", "--check"]) == 0


def test_the_table_parses() -> None:
    t = gen_walk_kinds.parse(gen_walk_kinds.DEF.read_text())
    names = [k.name for k in t.kinds]
    assert len(names) == len(set(names)) >= 10
    assert [k.value for k in walk_kinds.WalkKind] == names
    assert [p.value for p in walk_kinds.Profile] == names + [p for p, _ in t.profiles]
    assert walk_kinds.profile_walks("cadvisor") == ("smaps", "clear_refs")
    assert walk_kinds.profile_walks("wss") == ("clear_refs", "smaps")
    assert walk_kinds.profile_walks("smaps_rollup") == ("smaps_rollup",)
    with pytest.raises(ValueError, match="not a valid Profile"):
        walk_kinds.profile_walks("clearrefs")


def test_a_broken_definition_is_refused() -> None:
    text = gen_walk_kinds.DEF.read_text()
    with pytest.raises(ValueError, match="PTW_WALK_KINDS"):
        gen_walk_kinds.parse(text.replace("#define PTW_WALK_KINDS", "#define PTW_WALK_KINDZ"))
    with pytest.raises(ValueError, match="unknown kinds"):
        gen_walk_kinds.parse(text.replace("X(cadvisor, smaps,", "X(cadvisor, smapz,"))
    modes = gen_walk_kinds.LOCK_MODES_DEF.read_text()
    with pytest.raises(ValueError, match="a mode lock_modes.def does not list"):
        gen_walk_kinds.parse(text, modes.replace('X(write, "write")', ""))
    with pytest.raises(ValueError, match="PTW_LOCK_MODE_NAMES lists no none"):
        gen_walk_kinds.parse(text, modes.replace('X(mixed, "read+write")', 'X(mixed, "r/w")'))


def test_lock_modes_are_the_modules_with_the_results_names() -> None:
    """The C++ LockMode is ptwalk.ko's list in its order (lock_mode.cpp
    checks it too); results name the module's mixed read+write, and
    WalkLockMode reads them back, "" (older writers) as none."""
    t = gen_walk_kinds.parse(gen_walk_kinds.DEF.read_text())
    assert [m for m, _ in t.lock_modes] == list(ptwalk_abi.contract().lock_modes)
    names = [n for _, n in t.lock_modes]
    assert [m.value for m in walk_kinds.WalkLockMode] == names
    assert names == ["none", "read", "write", "read+write"]
    # the kinds' modes are walk lock modes of the same names
    assert [m.value for m in walk_kinds.LockMode] == ["read", "write"]
    for m in walk_kinds.LockMode:
        assert walk_kinds.WalkLockMode(m.value).name == m.name
    assert walk_kinds.WalkLockMode("") is walk_kinds.WalkLockMode.none
    for bad in ("mixed", "both", "READ", "read "):
        with pytest.raises(ValueError, match="not a valid WalkLockMode"):
            walk_kinds.WalkLockMode(bad)


def test_module_kinds_and_modes_are_the_modules() -> None:
    c = ptwalk_abi.contract()
    facts = walk_kinds.FACTS
    assert {f.module for f in facts.values()} - {None} == set(c.kinds)
    for k in c.kinds:  # the module sees each of its kinds as itself
        assert facts[walk_kinds.WalkKind(k)].module == k
    assert {f.lock_mode.value for f in facts.values()} <= set(c.lock_modes)


# A hand list: three or more distinct kind names as string literals within
# three lines of code. Data (results/, deploy/), the tests, the definition
# and its generated module are not code that may list them.
KIND_LITERAL = re.compile(r"""["'](%s)["']""" % "|".join(
    sorted((k.value for k in walk_kinds.WalkKind), key=len, reverse=True)))
# selections named after kinds, not lists of the kinds
ALLOWED = {
    "module/ptwalk_abi.h": "the module's contract, PTW_KINDS (checked against the table above)",
    "scripts/kernel_ab.py": "kernel-ab.sh's scenarios, a few named after kinds",
}


def hand_lists(text: str) -> list[int]:
    lines = text.splitlines()
    return [i + 1 for i in range(len(lines))
            if len(set(KIND_LITERAL.findall("\n".join(lines[i:i + 3])))) >= 3]


def code_files() -> list[Path]:
    out: list[Path] = []
    for top, pats in (("scripts", ("*.py",)), ("userspace", ("*.cpp", "*.hpp", "*.h", "*.c")),
                      ("module", ("*.c", "*.h")), ("lib", ("*.c", "*.h")),
                      ("selftests", ("*.c", "*.h"))):
        for pat in pats:
            out += (REPO / top).rglob(pat)
    skip = ("scripts/tests/", "userspace/tests/", "userspace/fuzz/", "scripts/qualify/test_")
    # build/ trees hold copies (module/build/<release>/ptwalk_abi.h)
    return sorted(f for f in out
                  if not str(f.relative_to(REPO)).startswith(skip)
                  and "build" not in f.relative_to(REPO).parts
                  and f != gen_walk_kinds.OUT)


def test_no_kind_is_listed_outside_the_definition() -> None:
    found = []
    for f in code_files():
        rel = str(f.relative_to(REPO))
        if rel in ALLOWED:
            continue
        found += [f"{rel}:{n}" for n in hand_lists(f.read_text(errors="replace"))]
    assert not found, f"walk kinds listed by hand (use walk_kinds.def): {found}"


def test_the_hand_list_check_finds_one() -> None:
    assert hand_lists('KINDS = {"cadvisor": ("smaps", "clear_refs"),\n'
                      '         "smaps_rollup": ("smaps_rollup",)}') == [1]
    assert hand_lists('if (k == "clear_refs" || k == "clear_refs_anon" ||\n'
                      '    k == "softdirty")') == [1]
    assert hand_lists('a = "smaps"\nb = "clear_refs"\n\n\nc = "pagemap"') == []
