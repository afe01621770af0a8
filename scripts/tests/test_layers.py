# SPDX-License-Identifier: GPL-2.0
"""The shape of the source tree: userspace's layers include only downwards
(the build enforces it for what it compiles; this also covers headers no
lower layer compiles), every layer's header is where its layer says, the
tests mirror the layers, no source file outgrows about 600 lines and no
function about 100 (`python3 scripts/tests/test_layers.py` lists the longest
functions)."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
US = REPO / "userspace"
INCLUDE = re.compile(r'^\s*#\s*include\s+"ptwalk/([A-Za-z0-9_]+\.hpp)"', re.M)
MAX_LINES = 600
MAX_FUNCTION_LINES = 100
# a keyword opening a type or namespace, not a function, before a "{" line
NOT_A_FUNCTION = re.compile(r"(struct|class|enum|union|namespace)\b")


def layers() -> list[str]:
    m = re.search(r"set\(PTWALK_LAYERS ([a-z ]+)\)", (US / "CMakeLists.txt").read_text())
    assert m, "userspace/CMakeLists.txt: no PTWALK_LAYERS"
    return m.group(1).split()


def header_layer() -> dict[str, str]:
    out: dict[str, str] = {}
    for layer in layers():
        for h in (US / layer / "include" / "ptwalk").glob("*.hpp"):
            assert h.name not in out, f"{h.name} in both {out[h.name]} and {layer}"
            out[h.name] = layer
    return out


def sources(layer: str) -> list[Path]:
    d = US / layer
    return sorted(p for p in d.rglob("*") if p.suffix in (".cpp", ".hpp"))


def test_layers_match_the_build_and_hold_every_source():
    ls = layers()
    assert ls == ["base", "os", "model", "procs", "backends", "commands"]
    stray = [p.relative_to(US) for p in US.glob("*/*.[ch]pp")
             if p.parent.name not in ("cli", "bench", "fuzz", "tests")]
    assert not stray, f"sources outside a layer's include/ or src/: {stray}"
    assert not (US / "src").exists() and not (US / "include").exists()


def test_includes_run_downwards_only():
    rank = {layer: i for i, layer in enumerate(layers())}
    where = header_layer()
    bad = []
    for layer in layers():
        for p in sources(layer):
            for h in INCLUDE.findall(p.read_text()):
                assert h in where, f"{p.relative_to(US)}: ptwalk/{h} is no layer's header"
                if rank[where[h]] > rank[layer]:
                    bad.append(f"{p.relative_to(US)} ({layer}) includes ptwalk/{h} "
                               f"({where[h]})")
    assert not bad, "includes running upwards:\n" + "\n".join(bad)


def test_a_wrong_include_would_be_caught():
    """The check itself: a model file including a commands header is found."""
    rank = {layer: i for i, layer in enumerate(layers())}
    where = header_layer()
    fake = '#include "ptwalk/run.hpp"\n#include "ptwalk/json.hpp"\n'
    up = [h for h in INCLUDE.findall(fake) if rank[where[h]] > rank["model"]]
    assert up == ["run.hpp"]


def test_tests_mirror_the_layers():
    ls = set(layers())
    for d in (US / "tests").iterdir():
        if d.is_dir():
            assert d.name in ls, f"tests/{d.name} is no layer"
    for t in (US / "tests").rglob("test_*.cpp"):
        if t.parent == US / "tests":
            continue  # cross-layer: the fuzzers' regression inputs
        assert t.parent.name in ls


def test_no_source_file_over_600_lines():
    roots = [US, REPO / "module", REPO / "selftests", REPO / "scripts"]
    big = []
    for r in roots:
        for p in r.rglob("*"):
            if (p.suffix not in (".c", ".h", ".cpp", ".hpp", ".py", ".sh")
                    or "tests" in p.relative_to(REPO).parts or "build" in p.parts):
                continue
            n = p.read_text(errors="replace").count("\n")
            if n > MAX_LINES:
                big.append(f"{p.relative_to(REPO)}: {n} lines")
    assert not big, "split these (ARCHITECTURE.md):\n" + "\n".join(big)


def functions(text: str) -> list[tuple[int, int, str]]:
    """(first line, lines, signature) of each function of C or C++ text:
    a signature starting at column 0, its "{" and "}" alone at column 0
    (kernel style and this project's). Lines: from "{" to "}"."""
    lines = text.split("\n")
    out = []
    i = 1
    while i < len(lines):
        if lines[i].rstrip() != "{":
            i += 1
            continue
        s = i - 1
        while s > 0 and lines[s][:1] in (" ", "\t"):
            s -= 1  # a signature over several lines
        j = i + 1
        while j < len(lines) and not lines[j].startswith("}"):
            j += 1
        sig = lines[s]
        if sig.strip() and not NOT_A_FUNCTION.match(sig):
            out.append((s + 1, j - i + 1, sig.strip()))
        i = j + 1
    return out


def function_lengths() -> list[tuple[int, str, str]]:
    """(lines, file:line, signature) of every C and C++ function of
    userspace/, selftests/, lib/ and module/, longest first."""
    out = []
    for r in (US, REPO / "selftests", REPO / "lib", REPO / "module"):
        for p in r.rglob("*"):
            if p.suffix not in (".c", ".h", ".cpp", ".hpp") or "build" in p.relative_to(REPO).parts:
                continue
            for line, n, sig in functions(p.read_text(errors="replace")):
                out.append((n, f"{p.relative_to(REPO)}:{line}", sig))
    return sorted(out, key=lambda f: (-f[0], f[1]))


def test_no_function_over_100_lines():
    long = [f"{where}: {n} lines: {sig}" for n, where, sig in function_lengths()
            if n > MAX_FUNCTION_LINES]
    assert not long, "split these (ARCHITECTURE.md):\n" + "\n".join(long)


def test_function_lengths_are_counted_from_brace_to_brace():
    text = ("static int f(int a,\n\t     int b)\n{\n\treturn a;\n}\n\n"
            "struct s\n{\n\tint x;\n};\n\nint g(void)\n{\n\tif (1) {\n\t}\n}\n")
    assert functions(text) == [(1, 3, "static int f(int a,"), (12, 4, "int g(void)")]


def test_one_walk_trigger():
    """The PAGEMAP_SCAN uapi and the walk syscalls live in lib/ptwalk_trigger
    (used by the scanner, the selftests and the module's test walker)."""
    decl = re.compile(r"_IOWR\('f', 16|struct pm_scan_arg \{|PmScanArg")
    own = REPO / "lib" / "ptwalk_trigger.h"
    found = []
    for r in (US, REPO / "selftests", REPO / "module", REPO / "lib"):
        for p in r.rglob("*"):
            if p.suffix in (".c", ".h", ".cpp", ".hpp") and p != own and decl.search(
                    p.read_text(errors="replace")):
                found.append(str(p.relative_to(REPO)))
    assert not found, f"PAGEMAP_SCAN declared outside lib/ptwalk_trigger.h: {found}"
    users = {"userspace/procs/src/scanner.cpp", "selftests/ptwalk_target.c",
             "selftests/ptwalk_proc.c", "module/tests/walker.c"}
    for u in users:
        assert "ptw_trigger_" in (REPO / u).read_text(), f"{u} does not use ptwalk_trigger"


if __name__ == "__main__":
    for n, where, sig in function_lengths()[:20]:
        print(f"{n:4d} {where}: {sig}")
