# SPDX-License-Identifier: GPL-2.0
"""make lint's own machinery: make test runs it, its checkpatch wrapper
reports what checkpatch finds and excuses only what the exception list
names, with a reason. (make lint itself checks the tree.)"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import lint_checkpatch as lc

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / "scripts" / "lint_checkpatch.py"

BAD_C = """// SPDX-License-Identifier: GPL-2.0
static int f(int *p)
{
\tint a;
\tif ((a = *p))
\t\treturn a;
\treturn 0 ;
}
"""
GOOD_C = """// SPDX-License-Identifier: GPL-2.0
static int f(int *p)
{
\tint a = *p;

\tif (a)
\t\treturn a;
\treturn 0;
}
"""


def test_make_test_runs_lint_and_keeps_going() -> None:
    """A lint failure fails make test; the suites after it still run, and
    the stage clock records it."""
    make = (REPO / "Makefile").read_text()
    recipe = make[make.index("\ntest:"):make.index("\ntest-unit:")]
    # lint runs beside pytest-host; its status, recorded by the stage
    # clock, fails make test after the wait
    assert "$$T lint --beside chrt --idle 0 $(MAKE) lint; } >$(BESIDE_LOG) 2>&1 &" in recipe
    assert ("""[ "$$(grep -Ec '^(module-matrix|fuzz-build|lint) 0 ' $(TEST_TIMES))" = 3 ]"""
            """ || rc=1;""") in recipe
    # ptwalk.ko's builds too, before the VM stage that boots them
    assert "$$T module-matrix --beside chrt --idle 0 $(MAKE) module-matrix;" in recipe
    assert recipe.index("wait;") < recipe.index("grep -Ec") < recipe.index("test-py-vm")
    assert 'T="scripts/stage-time.sh $(TEST_TIMES)"' in recipe
    assert re.search(r"^lint:\n\tscripts/deps\.sh lint\n\tscripts/lint\.sh\n", make, re.M)


def test_stage_clock_lists_background_stages_apart(tmp_path: Path) -> None:
    """stage-time.sh records each stage's status; a stage run --beside is
    in the table, marked, and not in the total (the wall time of the
    stages one after another)."""
    f = tmp_path / "times"
    st = str(REPO / "scripts/stage-time.sh")
    assert subprocess.run([st, str(f), "first", "sh", "-c", "sleep 1"]).returncode == 0
    assert subprocess.run([st, str(f), "side", "--beside", "sh", "-c",
                           "sleep 2; exit 3"]).returncode == 3
    first, side = (ln.split() for ln in f.read_text().splitlines())
    # whole seconds by date +%s: a 1 s sleep reads 1 or 2
    assert first[:2] == ["first", "0"] and int(first[2]) in (1, 2) and len(first) == 3
    assert side[:2] == ["side", "3"] and int(side[2]) in (2, 3) and side[3] == "beside"
    r = subprocess.run([st, "--table", str(f)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = {ln.split()[0]: ln.split()[1:] for ln in r.stdout.splitlines() if ln.strip()}
    assert rows["side"] == ["3", f"0:{int(side[2]):02d}", "(in", "the", "background)"]
    assert rows["total"] == [f"0:{int(first[2]):02d}"]


def _run(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(TOOL), str(path)], capture_output=True,
                          text=True, timeout=300)


def test_checkpatch_reports_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.c"
    bad.write_text(BAD_C)
    r = _run(bad)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"{bad}:5: ERROR:ASSIGN_IN_IF:" in r.stdout
    assert f"{bad}:5: WARNING:LINE_SPACING:" in r.stdout      # no blank after declarations
    assert f"{bad}:7: WARNING:SPACING:" in r.stdout           # space before ;
    assert "3 findings" in r.stdout


def test_checkpatch_passes_clean_code(tmp_path: Path) -> None:
    good = tmp_path / "good.c"
    good.write_text(GOOD_C)
    r = _run(good)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 findings" in r.stdout


def test_exception_list_parses_and_each_has_a_reason() -> None:
    excs = lc.load_exceptions(lc.EXCEPTIONS)
    assert len(excs) >= 10
    for e in excs:
        assert len(e.reason.split()) >= 4, e.where       # a reason, not a word
        assert all(re.fullmatch(r"[A-Z_]+", t) for t in e.types), e.where


def test_exception_without_a_reason_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "exceptions"
    f.write_text("ASSIGN_IN_IF module/x.c /foo/\n")
    with pytest.raises(ValueError, match="want 'TYPES FILES /REGEX/ reason'"):
        lc.load_exceptions(f)


def test_an_exception_excuses_only_its_rule_file_and_text() -> None:
    e = lc.Exception_(("ASSIGN_IN_IF",), "module/*", re.compile(r"\(t = READ_ONCE"),
                      "a reason of several words", "x:1")
    assert e.excuses("module/a.c", "ASSIGN_IN_IF", "if ((t = READ_ONCE(x)))")
    assert not e.excuses("module/a.c", "SPACING", "if ((t = READ_ONCE(x)))")
    assert not e.excuses("lib/a.c", "ASSIGN_IN_IF", "if ((t = READ_ONCE(x)))")
    assert not e.excuses("module/a.c", "ASSIGN_IN_IF", "if ((u = y))")
