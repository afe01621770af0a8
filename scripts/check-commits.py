#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Check commit messages in a git range against CONTRIBUTING.md: a subject
of at most 72 characters in the form `area: imperative ...` (area
words joined by ", ", a lower-case verb after the colon), and a body
for every non-merge commit. Prints one line per offence; exit 0 clean, 1
offences, 2 when the range cannot be read."""
from __future__ import annotations

import re
import subprocess
import sys

MAX_SUBJECT = 72
SUBJECT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_./+-]*(, [A-Za-z0-9][A-Za-z0-9_./+-]*)*: [a-z]")


def offences(rev_range: str) -> list[str]:
    out = subprocess.run(["git", "log", "--format=%H%x00%P%x00%s%x00%b%x01", rev_range],
                         capture_output=True, text=True, check=True).stdout
    bad = []
    for rec in out.split("\x01"):
        rec = rec.strip("\n")
        if not rec:
            continue
        sha, parents, subject, body = rec.split("\x00", 3)
        short = sha[:12]
        if len(parents.split()) > 1:
            if len(subject) > MAX_SUBJECT:
                bad.append(f"{short}: merge subject over {MAX_SUBJECT} characters")
            continue
        if len(subject) > MAX_SUBJECT:
            bad.append(f"{short}: subject of {len(subject)} characters (at most {MAX_SUBJECT})")
        if not SUBJECT.match(subject):
            bad.append(f"{short}: subject not in the form 'area: imperative ...': {subject!r}")
        if not body.strip():
            bad.append(f"{short}: no body (the why, the figures, the tests)")
    return bad


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: check-commits.py BASE..HEAD", file=sys.stderr)
        return 2
    try:
        bad = offences(argv[1])
    except subprocess.CalledProcessError as e:
        first = (e.stderr or str(e)).strip().splitlines()[0]
        print(f"check-commits: git log {argv[1]}: {first}", file=sys.stderr)
        return 2
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
