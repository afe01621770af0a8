# SPDX-License-Identifier: GPL-2.0
"""One budget source: the selftests' budget file and built-in defaults are
generated from results/budgets/default.json (scripts/gen_budgets.py), and
what the selftests then read equals that source."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import gen_budgets  # noqa: E402


def source_keys() -> dict[str, float]:
    doc = json.loads(gen_budgets.SOURCE.read_text())
    return {k["key"]: float(k["value"]) for k in doc["selftests"]["keys"]}


def test_generated_files_are_current() -> None:
    p = subprocess.run([sys.executable, "scripts/gen_budgets.py", "--check"], cwd=REPO,
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr


def test_a_hand_edit_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("BUDGET", "HEADER"):
        copy = tmp_path / getattr(gen_budgets, name).name
        copy.write_text(getattr(gen_budgets, name).read_text())
        monkeypatch.setattr(gen_budgets, name, copy)
    monkeypatch.setattr(gen_budgets, "REPO", tmp_path)
    assert gen_budgets.main(["gen", "--check"]) == 0
    b = tmp_path / "default.budget"
    b.write_text(b.read_text().replace("stall_factor=1.2", "stall_factor=1.5"))
    assert gen_budgets.main(["gen", "--check"]) == 1
    assert gen_budgets.main(["gen"]) == 0 and gen_budgets.main(["gen", "--check"]) == 0
    assert "stall_factor=1.2\n" in b.read_text()


def test_the_budget_file_holds_the_source_values() -> None:
    """Parsed as the selftests parse it (key=value, '#' comments)."""
    got = {}
    for line in gen_budgets.BUDGET.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            k, v = line.split("=", 1)
            got[k.strip()] = float(v)
    assert got == source_keys()


def test_the_built_in_defaults_are_the_source_values(tmp_path: Path) -> None:
    """The C defaults, compiled from the generated header, printed by C."""
    prog = tmp_path / "d.c"
    prog.write_text('#include <stdio.h>\n#include "ptwalk_budget_defaults.h"\n'
                    '#define P(e, k, d) printf("%s=%.10g\\n", k, (double)(d));\n'
                    'int main(void) { PTW_BUDGET_KEYS(P) return 0; }\n')
    exe = tmp_path / "d"
    subprocess.run(["cc", "-I", str(REPO / "selftests"), "-o", str(exe), str(prog)],
                   check=True, timeout=60)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    got = {k: float(v) for k, v in (kv.split("=") for kv in out.split())}
    assert got == source_keys()
    # and the selftests' enum is built from the same list, in that order
    h = (REPO / "selftests" / "ptwalk_util.h").read_text()
    assert re.search(r"enum ptw_budget_key \{\s*PTW_BUDGET_KEYS\(PTW_BUDGET_ENUM\)", h)


def test_bad_source_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "default.json"
    bad.write_text(json.dumps({"schema": "ptwalk.budgets/1", "budgets": []}))
    monkeypatch.setattr(gen_budgets, "SOURCE", bad)
    assert gen_budgets.main(["gen", "--check"]) == 2
    assert capsys.readouterr().err.strip() == f"gen_budgets: {bad}: no selftests.keys list"
