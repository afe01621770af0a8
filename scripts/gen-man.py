#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Writes ptwalk's man pages: docs/man/NAME.SECTION.md, Markdown in
go-md2man's dialect, turned into roff by go-md2man (Debian's go-md2man,
scripts/deps.sh man). A template's marker line is filled from the code,
so a page never lists an option the command lacks or misses one it has:

  @OPTIONS@     the command's options: run and monitor from their C++
                tables (`ptwalk help --man-options CMD`), compare, report
                and ptwalk-vm from their argparse parsers
  @PARAMETERS@  ptwalk.ko's parameters, from MODULE_PARM_DESC in module/
  @SCHEMA@      results/SCHEMA.md, its headings one level down

usage: gen-man.py PTWALK OUTDIR   (PTWALK: the built ptwalk binary)"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TEMPLATES = REPO / "docs" / "man"
sys.path.insert(0, str(REPO / "scripts"))

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|#])")


def md(text: str) -> str:
    """Text with Markdown's special characters escaped, on one line."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def argparse_md(p: argparse.ArgumentParser) -> str:
    """A parser's options as a definition list. argparse keeps them only in
    _actions (read-only use of an attribute stable since Python 3.2)."""
    out = []
    for a in p._actions:
        if isinstance(a, argparse._HelpAction):
            continue
        if a.option_strings:
            term = ", ".join(f"**{md(o)}**" for o in a.option_strings)
            if a.nargs != 0:
                term += f" *{md(str(a.metavar or a.dest.upper()))}*"
        else:
            term = f"*{md(str(a.metavar or a.dest.upper()))}*"
        text = a.help or ""
        if a.choices and "{" not in text:
            text = f"one of {', '.join(map(str, a.choices))}" + (f": {text}" if text else "")
        if not text:
            raise ValueError(f"{p.prog}: {term} has no help text for its man page")
        out.append(f"{term}\n: {md(text)}\n")
    return "\n".join(out)


def module_params() -> str:
    """ptwalk.ko's parameters from their MODULE_PARM_DESC."""
    out = []
    for c in sorted((REPO / "module").glob("*.c")):
        for m in re.finditer(r'MODULE_PARM_DESC\(\s*(\w+)\s*,\s*((?:"(?:[^"\\]|\\.)*"\s*)+)\)',
                             c.read_text()):
            text = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(2)))
            out.append(f"**{md(m.group(1))}**\n: {md(text)}\n")
    if not out:
        raise ValueError("no MODULE_PARM_DESC in module/*.c")
    return "\n".join(out)


def _cells(row: str) -> list[str]:
    """The cells of a Markdown table row (a \\| inside a cell is kept)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]


def schema() -> str:
    """results/SCHEMA.md, its title dropped, its headings one level down,
    and its tables as definition lists: a man page's 80 columns hold no
    table of three columns of prose."""
    lines = (REPO / "results" / "SCHEMA.md").read_text().splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    out: list[str] = []
    in_table = False
    for i, ln in enumerate(lines):
        if ln.startswith("|"):
            if not in_table:               # the header row, then |---| below it
                in_table = True
                continue
            cells = _cells(ln)
            if all(re.fullmatch(r":?-+:?", c) for c in cells):
                continue
            term = cells[0] + (f" ({cells[1]})" if len(cells) == 3 else "")
            out += [term, ": " + " ".join(cells[1 if len(cells) != 3 else 2:]), ""]
            continue
        in_table = False
        out.append(("#" + ln) if ln.startswith("#") else ln)
    return "\n".join(out) + "\n"


def fill(marker: str, page: str, ptwalk: str) -> str:
    if marker == "@OPTIONS@":
        if page in ("ptwalk-run", "ptwalk-monitor"):
            return subprocess.run([ptwalk, "help", "--man-options", page.split("-", 1)[1]],
                                  check=True, capture_output=True, text=True).stdout
        if page == "ptwalk-compare":
            from ptwalk_report import compare
            return argparse_md(compare.parser())
        if page == "ptwalk-report":
            from ptwalk_report import report
            return argparse_md(report.parser())
        if page == "ptwalk-vm":
            from ptwalk_vm import cli
            return argparse_md(cli.make_parser("run"))
    if marker == "@PARAMETERS@":
        return module_params()
    if marker == "@SCHEMA@":
        return schema()
    raise ValueError(f"{page}: {marker} is not a marker of this page")


def render(template: Path, ptwalk: str, md2man: str, out: Path) -> Path:
    name = template.name[:-3]                     # ptwalk-run.1
    page = name.rsplit(".", 1)[0]
    text = "".join(fill(ln.strip(), page, ptwalk) if re.fullmatch(r"@[A-Z]+@", ln.strip())
                   else ln for ln in template.read_text().splitlines(keepends=True))
    with tempfile.NamedTemporaryFile("w", suffix=".md", dir=out, delete=False) as f:
        f.write(text)
    tmp_roff = out / (name + ".tmp")
    try:
        subprocess.run([md2man, "-in", f.name, "-out", str(tmp_roff)], check=True)
        tmp_roff.replace(out / name)
    finally:
        Path(f.name).unlink()
        tmp_roff.unlink(missing_ok=True)
    return out / name


def main(argv: list[str]) -> int:
    usage = "usage: " + __doc__.rsplit("usage: ", 1)[1].strip()
    if len(argv) == 2 and argv[1] in ("-h", "--help"):
        print(usage)
        return 0
    if len(argv) != 3:
        print(usage, file=sys.stderr)
        return 2
    md2man = shutil.which("go-md2man")
    if md2man is None:
        print("gen-man: go-md2man not found (scripts/deps.sh man)", file=sys.stderr)
        return 1
    ptwalk, out = argv[1], Path(argv[2])
    out.mkdir(parents=True, exist_ok=True)
    try:
        for t in sorted(TEMPLATES.glob("*.md")):
            render(t, ptwalk, md2man, out)
    except (ValueError, OSError, subprocess.CalledProcessError) as e:
        print(f"gen-man: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
