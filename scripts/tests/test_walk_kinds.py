# SPDX-License-Identifier: GPL-2.0
"""userspace/model/include/ptwalk/walk_kinds.def is the one definition of the
walk kinds and scanner profiles, userspace/os/include/ptwalk/lock_modes.def
that of the lock modes, userspace/model/include/ptwalk/result_enums.def that
of the backends, the monitor's basis values and the results' other
enumerations: the C++ library includes them (their facts are checked
against module/ptwalk_abi.h at compile time), the Python tools read
scripts/ptwalk_report/walk_kinds.py and result_enums.py, written from them.
These checks fail when the Python modules drift from them or when code
lists kinds, backends or basis values by hand again."""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Iterable

import pytest

import ptwalk_abi

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import gen_walk_kinds  # noqa: E402
from ptwalk_report import result_enums, walk_kinds  # noqa: E402


def test_the_python_modules_are_the_definitions() -> None:
    want = gen_walk_kinds.render(gen_walk_kinds.parse(gen_walk_kinds.DEF.read_text()))
    assert gen_walk_kinds.OUT.read_text() == want, "run scripts/gen_walk_kinds.py"
    want = gen_walk_kinds.render_result_enums(
        gen_walk_kinds.parse_result_enums(gen_walk_kinds.ENUMS_DEF.read_text()))
    assert gen_walk_kinds.ENUMS_OUT.read_text() == want, "run scripts/gen_walk_kinds.py"
    assert gen_walk_kinds.main(["gen_walk_kinds.py", "--check"]) == 0


def test_a_drifted_module_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "result_enums.py"
    out.write_text(gen_walk_kinds.ENUMS_OUT.read_text().replace('    bpf = "bpf"\n', ""))
    monkeypatch.setattr(gen_walk_kinds, "ENUMS_OUT", out)
    assert gen_walk_kinds.main(["gen_walk_kinds.py", "--check"]) == 1
    assert "result_enums.py differs from" in capsys.readouterr().err


def test_backends_and_results_enums_are_the_definitions() -> None:
    e = gen_walk_kinds.parse_result_enums(gen_walk_kinds.ENUMS_DEF.read_text())
    # what ptwalk run and ptwalk monitor can use, in their --backend order
    assert [n for n, run, _ in e.backends if run] == ["module", "tracepoint", "syscall"]
    assert [n for n, _, mon in e.backends if mon] == ["module", "bpf", "tracepoint"]
    assert [b.value for b in result_enums.Backend] == ["module", "tracepoint", "syscall"]
    assert [b.value for b in result_enums.MonitorBackend] == ["module", "bpf", "tracepoint"]
    lists = {cls: [t for _, t in members] for cls, _, members in e.lists}
    for cls, texts in lists.items():
        assert [m.value for m in getattr(result_enums, cls)] == texts, cls
    assert lists["MonitorBasis"] == ["probe", "mm_owner", "fd_table", "exit", "exec",
                                     "unknown", "module"]
    assert result_enums.MeasuredStallSource.mmap_victim.value == "mmap victim, max during walks"
    for bad in ("ebpf", "auto", "Module"):
        with pytest.raises(ValueError, match="not a valid Backend"):
            result_enums.Backend(bad)


def test_a_broken_enum_definition_is_refused() -> None:
    text = gen_walk_kinds.ENUMS_DEF.read_text()
    with pytest.raises(ValueError, match="PTW_BACKENDS"):
        gen_walk_kinds.parse_result_enums(text.replace("#define PTW_BACKENDS",
                                                       "#define PTW_BACKENDZ"))
    with pytest.raises(ValueError, match="listed twice"):
        gen_walk_kinds.parse_result_enums(text.replace("X(mm_owner)", "X(probe)"))
    with pytest.raises(ValueError, match="PTW_VICTIMS lists nothing"):
        gen_walk_kinds.parse_result_enums(text.replace(
            "#define PTW_VICTIMS(X) X(read) X(write) X(fault) X(mmap) X(vma)",
            "#define PTW_VICTIMS(X) Y(read)"))


def test_the_table_parses() -> None:
    t = gen_walk_kinds.parse(gen_walk_kinds.DEF.read_text())
    names = [k.name for k in t.kinds]
    assert len(names) == len(set(names)) >= 10
    assert [k.value for k in walk_kinds.WalkKind] == names
    assert [p.value for p in walk_kinds.Profile] == (names + [p for p, _ in t.profiles]
                                                     + list(t.monitors))
    assert t.monitors == ("damon",)
    assert walk_kinds.profile_walks("damon") == ()  # kdamond walks, not the scanner
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
    with pytest.raises(ValueError, match="PTW_KERNEL_MONITORS"):
        gen_walk_kinds.parse(text.replace('X(damon, "', 'X(wss, "'))
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
    # the kinds' modes are walk lock modes of the same names; none is a
    # kind's mode on kernels where it walks under per-VMA locks
    assert [m.value for m in walk_kinds.LockMode] == ["none", "read", "write"]
    for m in walk_kinds.LockMode:
        assert walk_kinds.WalkLockMode(m.value).name == m.name
    assert walk_kinds.WalkLockMode("") is walk_kinds.WalkLockMode.none
    for bad in ("mixed", "both", "READ", "read "):
        with pytest.raises(ValueError, match="not a valid WalkLockMode"):
            walk_kinds.WalkLockMode(bad)


def test_lock_changes_parse_and_a_broken_one_is_refused() -> None:
    """PTW_LOCK_CHANGES reaches the Python table (kind, before, since, mode,
    unit); an unknown kind or mode is refused. The releases' order and
    one change per kind are checked by the C++ compiler (walk_kinds.cpp)."""
    text = gen_walk_kinds.DEF.read_text()
    t = gen_walk_kinds.parse(text)
    got = {c.name: (c.before, c.since, c.lock_mode, c.lock_unit) for c in t.changes}
    assert got["smaps"] == ("7.1", "7.2", "none", "vma_lock")
    assert got["numa_maps"] == ("7.1", "7.2", "none", "vma_lock")
    assert got["maps"] == ("6.12", "6.18", "none", "vma_lock")
    assert walk_kinds.LOCK_CHANGES[walk_kinds.WalkKind.smaps].lock_unit is \
        walk_kinds.LockUnit.vma_lock
    # the kinds whose walks still hold mmap_lock on 7.3 have no change
    for k in ("clear_refs", "smaps_rollup", "pagemap", "pagemap_scan"):
        assert walk_kinds.WalkKind(k) not in walk_kinds.LOCK_CHANGES
    with pytest.raises(ValueError, match="PTW_LOCK_CHANGES"):
        gen_walk_kinds.parse(text.replace('X(smaps, "7.1"', 'X(smapz, "6.18"'))
    with pytest.raises(ValueError, match="PTW_LOCK_CHANGES"):
        gen_walk_kinds.parse(text.replace('"7.2", none, vma_lock', '"7.2", nada, vma_lock', 1))


def test_module_kinds_and_modes_are_the_modules() -> None:
    c = ptwalk_abi.contract()
    facts = walk_kinds.FACTS
    assert {f.module for f in facts.values()} - {None} == set(c.kinds)
    for k in c.kinds:  # the module sees each of its kinds as itself
        assert facts[walk_kinds.WalkKind(k)].module == k
    assert {f.lock_mode.value for f in facts.values()} <= set(c.lock_modes)


# A hand list: three or more distinct names of one list as string literals
# within three lines of code. Data (results/, deploy/), the tests, the
# definitions and their generated modules are not code that may list them.
def literal(names: Iterable[str]) -> re.Pattern[str]:
    return re.compile(r"""["'](%s)["']""" % "|".join(
        re.escape(n) for n in sorted(set(names), key=len, reverse=True)))


KIND_LITERAL = literal(k.value for k in walk_kinds.WalkKind)
BACKEND_LITERAL = literal([b.value for b in result_enums.Backend]
                          + [b.value for b in result_enums.MonitorBackend])
BASIS_LITERAL = literal(b.value for b in result_enums.MonitorBasis)
LOCK_MODE_LITERAL = literal([m.value for m in walk_kinds.WalkLockMode] + ["mixed"])
# selections named after kinds, not lists of the kinds
ALLOWED = {
    "module/ptwalk_abi.h": "the module's contract, PTW_KINDS (checked against the table above)",
    "scripts/kernel_ab.py": "kernel-ab.sh's scenarios, a few named after kinds",
}


def hand_lists(text: str, names: re.Pattern[str] = KIND_LITERAL) -> list[int]:
    lines = text.splitlines()
    return [i + 1 for i in range(len(lines))
            if len(set(names.findall("\n".join(lines[i:i + 3])))) >= 3]


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
                  and f not in (gen_walk_kinds.OUT, gen_walk_kinds.ENUMS_OUT))


@pytest.mark.parametrize("what,names,allowed,definition", [
    ("walk kinds", KIND_LITERAL, ALLOWED, "walk_kinds.def"),
    ("backends", BACKEND_LITERAL, {}, "result_enums.def"),
    ("basis values", BASIS_LITERAL, {}, "result_enums.def"),
    ("lock modes", LOCK_MODE_LITERAL, {
        "module/ptwalk_abi.h": "the module's contract, PTW_LOCK_MODES",
        "userspace/os/src/lock_mode.cpp": "checks the module's list at compile time"},
     "lock_modes.def"),
])
def test_nothing_is_listed_outside_its_definition(what: str, names: re.Pattern[str],
                                                  allowed: dict[str, str],
                                                  definition: str) -> None:
    found = []
    for f in code_files():
        rel = str(f.relative_to(REPO))
        if rel in allowed:
            continue
        found += [f"{rel}:{n}" for n in hand_lists(f.read_text(errors="replace"), names)]
    assert not found, f"{what} listed by hand (use {definition}): {found}"


def test_the_hand_list_check_finds_one() -> None:
    assert hand_lists('KINDS = {"cadvisor": ("smaps", "clear_refs"),\n'
                      '         "smaps_rollup": ("smaps_rollup",)}') == [1]
    assert hand_lists('if (k == "clear_refs" || k == "clear_refs_anon" ||\n'
                      '    k == "softdirty")') == [1]
    assert hand_lists('a = "smaps"\nb = "clear_refs"\n\n\nc = "pagemap"') == []
    assert hand_lists('if b in ("module", "tracepoint", "syscall"):', BACKEND_LITERAL) == [1]
    assert hand_lists('{"bpf", "module",\n "tracepoint"}', BACKEND_LITERAL) == [1]
    assert hand_lists('basis in ("exit", "fd_table", "probe")', BASIS_LITERAL) == [1]
    assert hand_lists('b = "module"\nc = "bpf"', BACKEND_LITERAL) == []
    assert hand_lists('m in ("read", "write", "read+write")', LOCK_MODE_LITERAL) == [1]
