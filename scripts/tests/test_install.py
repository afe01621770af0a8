# SPDX-License-Identifier: GPL-2.0
"""make install: ptwalk finds its helpers (compare, report, calibrate) and
their data (budgets, the A/A calibration, the fit library) through the
installed layout, wherever the tree is put, without the source tree."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data" / "results"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An installed tree, staged in DESTDIR and then moved: nothing in it
    may name where it was staged, nor the source tree."""
    for f in ("build/ptwalk", "build/selftests/ptwalk_calibrate"):
        if not (REPO / f).exists():
            pytest.fail(f"{f} missing: run 'make build' first")
    # the man pages, as make man writes them (make install depends on it)
    g = subprocess.run(["/usr/bin/python3", "scripts/gen-man.py", "build/ptwalk", "build/man"],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert g.returncode == 0, g.stderr
    base = tmp_path_factory.mktemp("install")
    p = subprocess.run(["scripts/install.sh", str(base / "stage"), "/opt/ptwalk"], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    moved = base / "elsewhere"
    shutil.move(str(base / "stage" / "opt" / "ptwalk"), str(moved))
    return moved


def run(tree: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    # CC=false: the report must use the installed fit library, not build one
    e = {**os.environ, "CC": "/bin/false", **env}
    e.pop("PTWALK_FIT_LIB", None)
    return subprocess.run([str(tree / "bin" / "ptwalk"), *args], cwd="/", env=e,
                          capture_output=True, text=True, timeout=120)


def test_layout(tree: Path) -> None:
    for f in ("bin/ptwalk", "libexec/ptwalk/ptwalk-compare", "libexec/ptwalk/ptwalk-report",
              "libexec/ptwalk/ptwalk_calibrate", "libexec/ptwalk/libptwalk_fit.so",
              "libexec/ptwalk/layout.json", "libexec/ptwalk/ptwalk_report/compare.py",
              "share/ptwalk/budgets/default.json", "share/ptwalk/budgets/aa-noise.json",
              "share/doc/ptwalk/SCHEMA.md", "share/doc/ptwalk/docs/monitor.md",
              "share/bash-completion/completions/ptwalk"):
        assert (tree / f).exists(), f


def test_man_finds_every_installed_page(tree: Path) -> None:
    """`man ptwalk-run` works on an installed tree: man finds each page
    through the tree's MANPATH and renders it."""
    pages = sorted(p.name for p in (tree / "share" / "man").glob("man*/*"))
    assert len(pages) == 9, pages
    for page in pages:
        name, sec = page.rsplit(".", 1)
        r = subprocess.run(["man", "-P", "cat", sec, name], capture_output=True, text=True,
                           timeout=60, env={**os.environ, "MANPATH": str(tree / "share" / "man"),
                                            "MANWIDTH": "80"})
        assert r.returncode == 0 and "SEE ALSO" in r.stdout, (page, r.stderr[-300:])


def test_compare_uses_the_installed_calibration(tree: Path, tmp_path: Path) -> None:
    for s in ("a", "b"):  # away from the source tree, which must not be named
        shutil.copytree(DATA / s, tmp_path / s)
    p = run(tree, "compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "overall: NO SIGNIFICANT CHANGE" in p.stdout
    assert f"A/A calibration: {tree}/share/ptwalk/budgets/aa-noise.json" in p.stdout
    assert str(REPO) not in p.stdout


def test_report_uses_the_installed_fit(tree: Path, tmp_path: Path) -> None:
    p = run(tree, "report", str(DATA / "sweep"), "--out", str(tmp_path / "r"))
    assert p.returncode == 0, p.stdout + p.stderr
    md = (tmp_path / "r" / "report.md").read_text()
    assert "walk_cost_anon.png" in md and (tmp_path / "r" / "walk_cost_anon.png").exists()


def test_calibrate_is_found(tree: Path) -> None:
    p = run(tree, "calibrate", "--help")
    assert p.returncode == 0, p.stderr
    assert f"{tree}/bin/../libexec/ptwalk/ptwalk_calibrate" in p.stdout + p.stderr


def test_libexecdir_override_and_a_missing_helper(tree: Path, tmp_path: Path) -> None:
    p = run(tree, "compare", "x", "y", PTWALK_LIBEXECDIR=str(tmp_path / "none"))
    assert p.returncode == 1
    assert p.stderr.strip() == f"ptwalk: {tmp_path}/none/ptwalk-compare: No such file or directory"


def test_install_bad_input() -> None:
    p = subprocess.run(["scripts/install.sh", "/tmp/x", "relative/prefix"], cwd=REPO,
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2
    assert p.stderr.strip() == "install.sh: PREFIX must be absolute: relative/prefix"
    p = subprocess.run(["scripts/install.sh"], cwd=REPO, capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 2 and p.stderr.startswith("usage:")
