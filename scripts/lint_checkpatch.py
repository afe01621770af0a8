#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""checkpatch.pl --strict over the C of module/, lib/ and selftests/ (part of
`make lint`).

checkpatch.pl comes from the kernel source the project already installs
(linux-source-6.1): only scripts/checkpatch.pl and the two data files it
reads are extracted, once, into build/checkpatch/. Its options are in
.checkpatch.conf (checkpatch reads it from the top of the tree); userspace C
(lib/, selftests/, module/tests/) also skips the rules that name kernel-only
helpers. What remains may be excused only by scripts/checkpatch-exceptions,
one rule at a time with a reason; an exception that excuses nothing fails
too, so the list shrinks with the code.

usage: scripts/lint_checkpatch.py [FILE...]   (default: every tracked .c/.h
of module/, lib/ and selftests/). Exit 0 clean, 1 findings, 2 setup errors.
"""
from __future__ import annotations

import fnmatch
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE_TAR = Path("/usr/src/linux-source-6.1.tar.xz")
CACHE = ROOT / "build" / "checkpatch"
WANTED = ("scripts/checkpatch.pl", "scripts/spelling.txt", "scripts/const_structs.checkpatch")
EXCEPTIONS = ROOT / "scripts" / "checkpatch-exceptions"
DIRS = ("module", "lib", "selftests")
# C that runs in userspace: the kernel's helpers and types do not exist there
USERSPACE = ("lib/*", "selftests/*", "module/tests/*")
USERSPACE_IGNORE = (
    "PREFER_KERNEL_TYPES",  # u64 and friends are kernel types: userspace uses <stdint.h>
    "BIT_MACRO",  # BIT() is a kernel macro; userspace headers have no such helper
    "SPLIT_STRING",  # greppable kernel log lines; test diagnostics wrap at 100 columns
)
FINDING = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): (?:ERROR|WARNING|CHECK):(?P<type>[A-Z_]+): ")


@dataclass
class Exception_:
    types: tuple[str, ...]
    files: str
    regex: re.Pattern[str]
    reason: str
    where: str
    used: int = 0

    def excuses(self, path: str, rule: str, text: str) -> bool:
        return (rule in self.types and fnmatch.fnmatch(path, self.files)
                and self.regex.search(text) is not None)


def load_exceptions(path: Path) -> list[Exception_]:
    """TYPE[,TYPE...] FILE-GLOB /REGEX/ reason: REGEX is searched in the
    reported line and the three after it (a statement checkpatch reports
    on its first line)."""
    out = []
    pat = re.compile(r"^(?P<types>[A-Z_,]+)\s+(?P<files>\S+)\s+/(?P<re>.*)/\s+(?P<reason>\S.*)$")
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = pat.match(line)
        if not m:
            raise ValueError(f"{path.name}:{n}: want 'TYPES FILES /REGEX/ reason': {line}")
        out.append(Exception_(tuple(m["types"].split(",")), m["files"], re.compile(m["re"]),
                              m["reason"], f"{path.name}:{n}"))
    return out


def checkpatch() -> Path:
    """build/checkpatch/scripts/checkpatch.pl, extracted when missing or
    older than the installed kernel source."""
    script = CACHE / WANTED[0]
    if all((CACHE / w).exists() for w in WANTED) and \
            script.stat().st_mtime >= SOURCE_TAR.stat().st_mtime:
        return script
    if not SOURCE_TAR.exists():
        raise FileNotFoundError(f"{SOURCE_TAR} missing: scripts/deps.sh build installs "
                                "linux-source-6.1")
    CACHE.mkdir(parents=True, exist_ok=True)
    # tar(1) with xz: about 10 s; Python's tarfile reads the archive 10x slower
    top = "linux-source-6.1/"
    p = subprocess.run(["tar", "-xJf", str(SOURCE_TAR), "-C", str(CACHE), "--strip-components=1",
                        *(top + w for w in WANTED)], capture_output=True, text=True)
    if p.returncode or not all((CACHE / w).exists() for w in WANTED):
        raise FileNotFoundError(f"{SOURCE_TAR}: cannot extract {', '.join(WANTED)}: "
                                + p.stderr.strip())
    for w in WANTED:  # the cache is as new as the source it came from
        (CACHE / w).touch()
    script.chmod(0o755)
    return script


def start(script: Path, files: list[str], extra: tuple[str, ...]) -> subprocess.Popen[str]:
    argv = ["perl", str(script), "--terse", "--no-summary", "--show-types", "-f"]
    if extra:
        argv.append("--ignore=" + ",".join(extra))
    return subprocess.Popen(argv + files, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def collect(p: subprocess.Popen[str]) -> tuple[list[str], list[str]]:
    """(findings, other output) of one checkpatch run."""
    out, _ = p.communicate()
    found: list[str] = []
    other: list[str] = []
    for line in out.splitlines():
        (found if FINDING.match(line) else other).append(line)
    if p.returncode not in (0, 1) or (p.returncode and not found):
        other.append(f"checkpatch.pl exited {p.returncode}")
    return found, other


def main(argv: list[str]) -> int:
    listed = argv or subprocess.run(["git", "ls-files", "--", *DIRS], cwd=ROOT, check=True,
                                    capture_output=True, text=True).stdout.split()
    files = [f for f in listed if f.endswith((".c", ".h"))]
    try:
        script = checkpatch()
        excs = load_exceptions(EXCEPTIONS)
    except (OSError, ValueError) as e:
        print(f"lint_checkpatch: {e}", file=sys.stderr)
        return 2
    user = [f for f in files if any(fnmatch.fnmatch(f, g) for g in USERSPACE)]
    kernel = [f for f in files if f not in user]
    found: list[str] = []
    other: list[str] = []
    # the kernel's and the userspace C side by side: about half the time
    runs = [start(script, group, extra)
            for group, extra in ((kernel, ()), (user, USERSPACE_IGNORE)) if group]
    for p in runs:
        got, said = collect(p)
        found += got
        other += said
    left = []
    lines: dict[str, list[str]] = {}
    for finding in found:
        m = FINDING.match(finding)
        assert m
        path, n = m["path"], int(m["line"])
        if path not in lines:
            lines[path] = (ROOT / path).read_text(errors="replace").splitlines()
        text = "\n".join(lines[path][n - 1:n + 3])
        exc = next((e for e in excs if e.excuses(path, m["type"], text)), None)
        if exc:
            exc.used += 1
        else:
            left.append(finding)
    for line in other:
        print(line)
    for line in left:
        print(line)
    stale = [x for x in excs if not x.used] if not argv else []
    for exc in stale:
        print(f"{exc.where}: exception excuses nothing any more: remove it ({exc.reason})")
    excused = sum(x.used for x in excs)
    print(f"checkpatch --strict: {len(files)} files, {len(left)} findings, "
          f"{excused} excused by {EXCEPTIONS.name}")
    return 1 if left or other or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
