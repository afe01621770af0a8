# SPDX-License-Identifier: GPL-2.0
"""Commit messages since the commit style began (CONTRIBUTING.md) pass
scripts/check-commits.py, and the checker catches each offence."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHECK = REPO / "scripts" / "check-commits.py"
RULE_BEGAN = "20c6715"  # the last commit with an essay for a subject


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout


def test_history_since_the_rule() -> None:
    r = subprocess.run(["git", "cat-file", "-e", f"{RULE_BEGAN}^{{commit}}"], cwd=REPO,
                       capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"commit {RULE_BEGAN} is not in this clone (shallow history)")
    n = int(git(REPO, "rev-list", "--count", f"{RULE_BEGAN}..HEAD"))
    c = subprocess.run([str(CHECK), f"{RULE_BEGAN}..HEAD"], cwd=REPO, capture_output=True,
                       text=True)
    assert c.returncode == 0, c.stdout + c.stderr
    assert n > 0


def test_checker_catches_each_offence(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "user.email", "ci@ptwalk.invalid")
    git(tmp_path, "config", "user.name", "ptwalk ci")
    msgs = ["run: add a first thing\n\nWhy it is needed.",
            "run: " + "x" * 70 + "\n\nbody",
            "Added a thing in an essay form\n\nbody",
            "report: say what a body is for",
            "vm, run: keep two areas together\n\nbody"]
    for i, m in enumerate(msgs):
        (tmp_path / f"f{i}").write_text(str(i))
        git(tmp_path, "add", ".")
        git(tmp_path, "commit", "-q", "-m", m)
    r = subprocess.run([str(CHECK), "HEAD~4..HEAD"], cwd=tmp_path, capture_output=True,
                       text=True)
    assert r.returncode == 1, r.stdout
    lines = r.stdout.splitlines()
    assert len(lines) == 3, lines
    assert "subject of 75 characters" in lines[-1] or any("75 characters" in x for x in lines)
    assert any("not in the form" in x and "essay" in x for x in lines), lines
    assert any("no body" in x for x in lines), lines
    r = subprocess.run([str(CHECK), "HEAD~1..HEAD"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
    r = subprocess.run([str(CHECK), "nosuch..HEAD"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
