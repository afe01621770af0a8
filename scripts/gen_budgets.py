#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The selftests' budgets from their one source, the "selftests" section of
results/budgets/default.json: selftests/budgets/default.budget (the file
the selftests read) and selftests/ptwalk_budget_defaults.h (the keys, their
enum names and the built-in defaults). Both are committed so that the
kselftest target builds without this script; test_budget_source.py fails
when they differ from what this writes.

  gen_budgets.py          write both files
  gen_budgets.py --check  exit 1 (naming the file) when either is stale"""
from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "results" / "budgets" / "default.json"
BUDGET = REPO / "selftests" / "budgets" / "default.budget"
HEADER = REPO / "selftests" / "ptwalk_budget_defaults.h"
NOTE = "generated from results/budgets/default.json by scripts/gen_budgets.py: edit that"


def keys(doc: dict) -> list[dict]:
    sel = doc.get("selftests")
    if not isinstance(sel, dict) or not isinstance(sel.get("keys"), list) or not sel["keys"]:
        raise ValueError(f"{SOURCE}: no selftests.keys list")
    for k in sel["keys"]:
        if not (isinstance(k.get("key"), str) and isinstance(k.get("enum"), str)
                and isinstance(k.get("value"), (int, float))):
            raise ValueError(f"{SOURCE}: selftests key {k!r}: needs key, enum and value")
    return sel["keys"]


def fmt(v: float) -> str:
    return f"{v:.10g}"


def budget_text(doc: dict) -> str:
    ks = keys(doc)
    out = [f"# ptwalk default budget ({NOTE})."]
    out += ["# " + line for line in textwrap.wrap(doc["selftests"].get("comment", ""), 72)]
    out += ["# Format: key=value per line, '#' starts a comment; unknown keys are",
            "# reported and ignored, missing keys keep these defaults."]
    for k in ks:
        if k.get("why"):
            out.append("#")
            out += ["# " + line for line in textwrap.wrap(k["why"], 72)]
        out.append(f"{k['key']}={fmt(k['value'])}")
    return "\n".join(out) + "\n"


def header_text(doc: dict) -> str:
    rows = [f"\tX({k['enum']}, \"{k['key']}\", {fmt(k['value'])})" for k in keys(doc)]
    return ("/* SPDX-License-Identifier: GPL-2.0 */\n"
            "/*\n * The selftests' budget keys and built-in defaults,\n"
            f" * {NOTE}.\n */\n"
            "#ifndef PTWALK_BUDGET_DEFAULTS_H\n#define PTWALK_BUDGET_DEFAULTS_H\n\n"
            "/* X(enum name, key in a .budget file, default) */\n"
            "#define PTW_BUDGET_KEYS(X) \\\n" + " \\\n".join(rows) + "\n\n#endif\n")


def write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    try:
        doc = json.loads(SOURCE.read_text(encoding="utf-8"))
        want = {BUDGET: budget_text(doc), HEADER: header_text(doc)}
    except (OSError, ValueError) as e:
        print(f"gen_budgets: {e}", file=sys.stderr)
        return 2
    if argv[1:] == ["--check"]:
        stale = [p for p, t in want.items() if not p.exists() or p.read_text() != t]
        for p in stale:
            print(f"gen_budgets: {p.relative_to(REPO)} is stale: run scripts/gen_budgets.py",
                  file=sys.stderr)
        return 1 if stale else 0
    if argv[1:]:
        print("usage: gen_budgets.py [--check]", file=sys.stderr)
        return 2
    for p, t in want.items():
        write(p, t)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
