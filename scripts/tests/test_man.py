# SPDX-License-Identifier: GPL-2.0
"""The man pages (docs/man/*.md, made by scripts/gen-man.py with
go-md2man): the nine pages are made, each renders with no groff warning,
has the sections a reader looks for, and lists exactly the options its
command takes, from the same tables as its usage. Their examples run in
test_docs.py; make install puts them where man finds them
(test_install.py)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PTWALK = REPO / "build" / "ptwalk"
GEN = REPO / "scripts" / "gen-man.py"
PAGES = {"ptwalk.1", "ptwalk-run.1", "ptwalk-monitor.8", "ptwalk-compare.1", "ptwalk-report.1",
         "ptwalk-qualify.8", "ptwalk-vm.1", "ptwalk.ko.4", "ptwalk-results.5"}


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not PTWALK.is_file():
        pytest.fail("build/ptwalk is not built (make build)")
    out = tmp_path_factory.mktemp("man")
    r = subprocess.run(["/usr/bin/python3", str(GEN), str(PTWALK), str(out)], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return out


def _section(roff: str, name: str) -> str:
    m = re.search(rf"^\.SH {name}\n(.*?)(?=^\.SH |\Z)", roff, re.M | re.S)
    return m.group(1) if m else ""


def _terms(roff: str, section: str) -> set[str]:
    """The option names a page's SECTION defines (its .TP terms)."""
    terms = re.findall(r"^\.TP\n(.*)$", _section(roff, section), re.M)
    # a term line names one option or several ("-q, --quiet")
    return {o for t in terms for o in re.findall(r"\\fB(-[-\w]+)\\fP", t)}


def test_every_page_is_made(pages: Path) -> None:
    assert {p.name for p in pages.iterdir()} == PAGES


@pytest.mark.parametrize("page", sorted(PAGES))
def test_page_renders_without_a_warning(pages: Path, page: str) -> None:
    # -k: preconv, as man runs it; -ww: every warning
    g = subprocess.run(["groff", "-k", "-man", "-Tutf8", "-ww", "-z", str(pages / page)],
                       capture_output=True, text=True, timeout=60)
    assert g.returncode == 0 and not g.stderr, g.stderr[-1000:]
    m = subprocess.run(["man", "-l", "-P", "cat", str(pages / page)], capture_output=True,
                       text=True, timeout=60, env={"MANWIDTH": "80", "PATH": "/usr/bin:/bin"})
    assert m.returncode == 0, m.stderr
    text = m.stdout
    for sec in ("NAME", "SYNOPSIS", "DESCRIPTION", "EXAMPLES", "SEE ALSO"):
        if sec == "SYNOPSIS" and page == "ptwalk-results.5":
            continue  # a file format: no command line
        assert re.search(rf"^{sec}$", text, re.M), f"{page}: no {sec}"
    assert "@" not in re.sub(r"\S+@\S+", "", text), f"{page}: a marker was left unfilled"


def _usage_options(cmd: str) -> set[str]:
    r = subprocess.run([str(PTWALK), cmd, "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0
    return set(re.findall(r"^  (--[a-z-]+)", r.stdout, re.M))


@pytest.mark.parametrize("cmd,page", [("run", "ptwalk-run.1"), ("monitor", "ptwalk-monitor.8")])
def test_options_are_the_commands(pages: Path, cmd: str, page: str) -> None:
    got = _terms((pages / page).read_text(), "OPTIONS")
    assert got == _usage_options(cmd), got ^ _usage_options(cmd)


def test_options_of_the_python_commands(pages: Path) -> None:
    import sys
    sys.path.insert(0, str(REPO / "scripts"))
    from ptwalk_report import compare, report
    from ptwalk_vm import cli
    for page, parser in (("ptwalk-compare.1", compare.parser()),
                         ("ptwalk-report.1", report.parser()),
                         ("ptwalk-vm.1", cli.make_parser("run"))):
        want = {o for a in parser._actions for o in a.option_strings} - {"-h", "--help"}
        got = _terms((pages / page).read_text(), "OPTIONS")
        assert got == want, (page, got ^ want)


def test_module_parameters_are_the_modules(pages: Path) -> None:
    src = "".join(p.read_text() for p in (REPO / "module").glob("*.c"))
    want = set(re.findall(r"^module_param(?:_cb)?\((\w+),", src, re.M))
    roff = (pages / "ptwalk.ko.4").read_text()
    got = set(re.findall(r"^\.TP\n\\fB(\w+)\\fP", _section(roff, "PARAMETERS"), re.M))
    assert got == want and want, (got, want)


def test_man_options_refuses_other_commands() -> None:
    r = subprocess.run([str(PTWALK), "help", "--man-options", "compare"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "run or monitor" in r.stderr
    r = subprocess.run([str(PTWALK), "help", "--man-options", "run"], capture_output=True,
                       text=True, timeout=30)
    # Markdown's special characters are escaped: a choice list is not a table
    assert r.returncode == 0 and "anon \\| thp \\| shmem" in r.stdout, r.stdout[:400]


def test_gen_man_usage() -> None:
    r = subprocess.run(["/usr/bin/python3", str(GEN)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and r.stderr.startswith("usage: gen-man.py"), r.stderr
    r = subprocess.run(["/usr/bin/python3", str(GEN), "--help"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0 and r.stdout.startswith("usage: gen-man.py"), r.stdout
