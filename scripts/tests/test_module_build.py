# SPDX-License-Identifier: GPL-2.0
"""ptwalk.ko's build: the compiler checks the probe prototypes against the
kernel's own event headers (a wrong one fails the build instead of reading
the wrong argument), and `make module` picks the running flavour's headers."""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MODULE = REPO / "module"


def _headers() -> list[str]:
    return sorted(d for d in glob.glob("/usr/src/linux-headers-6.1.*")
                  if Path(d, "Module.symvers").exists())


# under `make test` the parent make's flags would make this one print
# "Entering directory" lines: run it as a user would, from a clean slate
ENV = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}


def _kdir(release: str) -> str:
    p = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(MODULE), "kdir",
                        f"RUNNING_REL={release}"],
                       capture_output=True, text=True, timeout=60, env=ENV)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def test_make_module_picks_the_running_flavour() -> None:
    trees = _headers()
    if not trees:
        pytest.fail("no linux-headers installed (scripts/deps.sh module)")
    for tree in trees:
        m = re.match(r".*/linux-headers-\d[\d.]*-\d+-(.+)$", tree)
        assert m, tree
        flavour = m.group(1)                      # amd64, cloud-amd64, rt-amd64
        # a release of that flavour whose /lib/modules tree is not installed
        got = _kdir(f"6.1.0-999-{flavour}")
        assert got.endswith(f"-{flavour}") and "linux-headers" in got, (flavour, got)
    # no headers of the flavour: the newest tree, with a warning
    p = subprocess.run(["make", "-C", str(MODULE), "kdir", "RUNNING_REL=6.1.0-999-nosuch"],
                       capture_output=True, text=True, timeout=60, env=ENV)
    assert "no headers for the running flavour" in p.stderr, p.stderr


def _build(src: Path, kdir: str) -> subprocess.CompletedProcess[str]:
    # the README's form: make -C module KDIR=TREE (module/Makefile runs kbuild)
    return subprocess.run(["make", "-C", str(src), f"KDIR={kdir}"],
                          capture_output=True, text=True, timeout=600, env=ENV)


def test_probe_prototypes_are_checked_by_the_compiler(tmp_path: Path) -> None:
    trees = _headers()
    if not trees:
        pytest.fail("no linux-headers installed (scripts/deps.sh module)")
    kdir = trees[0]
    src = tmp_path / "m"
    shutil.copytree(MODULE, src, ignore=shutil.ignore_patterns(
        "build", "tests", "testdata", "*.o", "*.ko", "*.mod*", ".*.cmd"))
    # the sources as they are build
    ok = _build(src, kdir)
    assert ok.returncode == 0, ok.stderr[-3000:]
    # the other mmap_lock prototype (as if the kernel were 6.14+, or a
    # backport were missed): the typed registration refuses it
    compat = src / "compat" / "ptwalk_compat.h"
    text = compat.read_text()
    compat.write_text(text.replace("#ifdef PTW_MMAP_LOCK_MEMCG_PATH",
                                   "#ifndef PTW_MMAP_LOCK_MEMCG_PATH"))
    bad = _build(src, kdir)
    assert bad.returncode != 0
    assert "register_trace_mmap_lock_start_locking" in bad.stderr, bad.stderr[-3000:]
    assert "incompatible-pointer-types" in bad.stderr
    # a wrong tlb_flush probe: checked too, though it registers by name
    compat.write_text(text)
    lock = src / "ptwalk_lock_tp.c"
    lock.write_text(lock.read_text().replace(
        "ptw_tp_tlb_flush(void *data, int reason,", "ptw_tp_tlb_flush(void *data, long reason,"))
    bad = _build(src, kdir)
    assert bad.returncode != 0
    assert "register_trace_tlb_flush" in bad.stderr, bad.stderr[-3000:]
