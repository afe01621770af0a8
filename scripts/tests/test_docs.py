# SPDX-License-Identifier: GPL-2.0
"""The README, docs/ and the man pages: every relative link resolves (file
and heading), the README stays a page a newcomer reads in five minutes and
links every docs page, and every example command, in the README's ```sh
blocks and the man pages' EXAMPLES, runs here as written but for the
placeholders and lengths _run_block changes (and says why), or names the
test that runs it (COVERED). A documented command that does not work is a
bug, and a new example with no way to run it fails this test."""
from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PTWALK = REPO / "build" / "ptwalk"
README = REPO / "README.md"
PAGES = [README, REPO / "ARCHITECTURE.md", REPO / "CONTRIBUTING.md",
         *sorted((REPO / "docs").glob("*.md"))]
README_MAX_LINES = 170

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```sh\n(.*?)^```", re.M | re.S)

MAN = REPO / "docs" / "man"
# Examples run by another test, which must exist and contain the text given.
# make qualify as a whole (2 minutes at QUICK=1) is not in make test: its
# runner, matrix and budgets are (test_qualify.py), and a live QUICK pair
# through ptwalk compare (test_compare_aa_live.py).
COVERED = {
    "make qualify": ("scripts/tests/test_qualify.py", "matrix.run_scenario"),
    "make test": (".ci/run", "make test"),
    "make -C module KDIR=": ("scripts/tests/test_module_build.py", '"-C", str(src), f"KDIR='),
    "make kernel-ab PATCH=": ("scripts/tests/test_kernel_ab.py", "kernel_ab.py"),
    "make deb": ("scripts/tests/test_deb.py", '"make", "-s", "deb"'),
    "scripts/ptwalk-vm --kernel": ("scripts/tests/test_docs.py",
                                   "test_readme_vm_example_runs"),
    "insmod ptwalk.ko kinds=": ("module/tests/vm-selftest.sh",
                                'insmod "$KO" kinds=clear_refs,smaps'),
    "cat /sys/kernel/debug/ptwalk/walks": ("module/tests/vm-selftest.sh",
                                           "cat /sys/kernel/debug/ptwalk/walks"),
}
BACKPORT = "results/reference/smaps-rollup-backport/run-1/vm"


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but - and _
    dropped, spaces to -."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)
    return {slug(m.group(1)) for m in re.finditer(r"^#+ (.*)$", text, re.M)}


def _commands(block: str) -> list[str]:
    """A code block's commands: continuations joined, comments off."""
    out = []
    for cmd in block.replace("\\\n", " ").splitlines():
        cmd = re.sub(r"\s+#.*$", "", cmd).strip()
        if cmd:
            out.append(re.sub(r"\s+", " ", cmd))
    return out


def readme_blocks() -> list[list[str]]:
    return [_commands(b) for b in FENCE.findall(README.read_text())]


def man_blocks() -> list[tuple[str, list[str]]]:
    """(page, commands) of each code block in a man page's EXAMPLES."""
    out = []
    for page in sorted(MAN.glob("*.md")):
        text = page.read_text()
        m = re.search(r"^# EXAMPLES\n(.*?)(?=^# )", text, re.M | re.S)
        for b in re.findall(r"^```\n(.*?)^```", m.group(1) if m else "", re.M | re.S):
            out.append((page.name, _commands(b)))
    return out


def examples() -> list[str]:
    """Every documented command, README and man pages."""
    return [c for b in readme_blocks() for c in b] + [c for _, b in man_blocks() for c in b]


def _ptwalk(cmd: str) -> bool:
    return cmd.startswith(("build/ptwalk ", "ptwalk ", "scripts/ptwalk-vm matrix"))


def test_every_relative_link_resolves() -> None:
    bad = []
    for page in PAGES:
        for target in LINK.findall(page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, frag = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                bad.append(f"{page.relative_to(REPO)}: {target}: no such file")
            elif frag and dest.suffix == ".md" and frag not in anchors(dest):
                bad.append(f"{page.relative_to(REPO)}: {target}: no such heading")
    assert not bad, "\n".join(bad)


def test_slug_follows_github() -> None:
    assert slug("What `make test` runs") == "what-make-test-runs"
    assert slug("Three views, one truth") == "three-views-one-truth"
    assert slug("Validate an mm patch in a VM, on 6.1 to 7.3") == \
        "validate-an-mm-patch-in-a-vm-on-61-to-73"


def test_readme_is_short_and_links_every_docs_page() -> None:
    text = README.read_text()
    n = len(text.splitlines())
    assert n <= README_MAX_LINES, f"README.md is {n} lines (at most {README_MAX_LINES})"
    for page in sorted((REPO / "docs").glob("*.md")):
        assert f"(docs/{page.name})" in text, f"README does not link docs/{page.name}"


def test_every_example_is_run_somewhere() -> None:
    cmds = examples()
    assert len(cmds) >= 20, cmds
    unknown = [c for c in cmds if not _ptwalk(c) and not any(c.startswith(k) for k in COVERED)]
    assert not unknown, f"documented examples no test runs: {unknown}"
    for prefix, (path, text) in COVERED.items():
        assert any(c.startswith(prefix) for c in cmds), f"COVERED lists {prefix!r}: not in README"
        assert text in (REPO / path).read_text(), f"{path} does not run {prefix!r}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _size_mib(text: str) -> float:
    n, unit = re.fullmatch(r"(\d+)([KMGT]?)", text).groups()  # type: ignore[union-attr]
    return int(n) * {"K": 1 / 1024, "": 1 / 2**20, "M": 1, "G": 1024, "T": 2**20}[unit]


def _run_one(cmd: str, cwd: Path) -> None:
    argv = shlex.split(cmd)
    if argv[0] == "ptwalk":
        argv[0] = "build/ptwalk"
    argv[0] = str(REPO / argv[0])
    sub = argv[1]
    if sub == "run" and "--dry-run" not in argv:
        size = argv[argv.index("--size") + 1] if "--size" in argv else "1G"
        dur = argv[argv.index("--duration") + 1] if "--duration" in argv else "10s"
        if _size_mib(size) > 256 or not re.fullmatch(r"[1-3]s|\d+ms", dur):
            argv += ["--dry-run"]  # the plan and the memory guard: larger runs run elsewhere
    elif sub == "compare" and any("HOST/" in a for a in argv):
        argv[2:] = [str(REPO / BACKPORT / "before" / "results"),   # placeholders: two
                    str(REPO / BACKPORT / "after" / "results")]    # recorded sets
    elif sub == "monitor" and "--serve" in argv:
        port = _free_port()
        argv[argv.index("--serve") + 1] = f"127.0.0.1:{port}"
        p = subprocess.Popen(argv + ["--quiet"], cwd=cwd, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            body, deadline = "", time.monotonic() + 20
            while time.monotonic() < deadline and p.poll() is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                                timeout=5) as r:
                        body = r.read().decode()
                    break
                except OSError:
                    time.sleep(0.2)
            assert "ptwalk_monitor_info" in body, (p.poll(), body[:300])
        finally:
            p.send_signal(signal.SIGTERM)
            out, err = p.communicate(timeout=30)
        assert p.returncode == 0, (cmd, p.returncode, err[-500:])
        return
    elif sub == "monitor":
        i = argv.index("--duration")
        argv[i + 1] = "1s"  # the documented 30 s, shortened
    r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(REPO / "scripts")})
    assert r.returncode == 0, (cmd, r.returncode, r.stdout[-500:], r.stderr[-500:])
    assert r.stdout.strip(), cmd


def _run_block(cmds: list[str], tmp_path: Path) -> None:
    """A block's ptwalk commands in order, in one directory (a later one may
    read what an earlier one wrote); relative paths name the source tree's
    files when there is one."""
    for cmd in cmds:
        if _ptwalk(cmd):
            for f in re.findall(r"results/reference/\S+", cmd):
                dest = tmp_path / f
                if not dest.exists():
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.symlink_to(REPO / f)
            _run_one(cmd, tmp_path)


_BLOCKS = [("README", b) for b in readme_blocks()] + man_blocks()


@pytest.mark.parametrize("where,cmds", [pytest.param(w, b, id=f"{w}-{i}")
                                        for i, (w, b) in enumerate(_BLOCKS)
                                        if any(_ptwalk(c) for c in b)])
def test_documented_example_runs(where: str, cmds: list[str], tmp_path: Path) -> None:
    if not PTWALK.is_file():
        pytest.fail("build/ptwalk is not built (make build)")
    _run_block(cmds, tmp_path)


@pytest.mark.vm
def test_readme_vm_example_runs(tmp_path: Path) -> None:
    """The README's ptwalk-vm command, with a matrix kernel's image and
    ptwalk.ko for the placeholders of a tree you built."""
    from ptwalk_vm import config
    from ptwalk_vm.pytest_plugin import BOOT_SLOTS, matrix_kernel, skip_or_fail, vm_unavailable
    cfg = config.load()
    k = matrix_kernel(cfg, "cloud-amd64")
    why = vm_unavailable(cfg, k)
    if why:
        skip_or_fail(why)
    if k.ko is None:
        pytest.fail(f"ptwalk.ko is not built for {k.release} (make module-matrix)")
    cmd = next(c for b in readme_blocks() for c in b if c.startswith("scripts/ptwalk-vm --kernel"))
    argv = shlex.split(cmd)
    argv[0] = str(REPO / argv[0])
    argv[argv.index("--kernel") + 1] = str(k.image)
    argv[argv.index("--ko") + 1] = str(k.ko)
    argv[1:1] = ["run", "--results", str(tmp_path)]
    with BOOT_SLOTS:
        r = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.returncode, r.stdout[-1500:], r.stderr[-1500:])
    assert "backend: module (" in r.stdout, r.stdout[-1500:]
