# SPDX-License-Identifier: GPL-2.0
"""scripts/cross_version.py: the plan of the standard set, its bad input,
its boot commands, and its compare step on synthetic result sets (the VM
boots themselves are what test_kernel_ab.py and the VM suites run)."""
from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

import cross_version as cv
import ptwalk_abi
from ptwalk_report import synthetic
from ptwalk_vm import config
from ptwalk_vm.pytest_plugin import skip_or_fail

ROOT = Path(__file__).resolve().parents[2]
PY = ROOT / "scripts" / "cross_version.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(PY), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_plan_is_the_standard_set() -> None:
    """Every walk kind of the module's contract x anon, thp, shmem x the
    fault region below and above, victims read, fault and mmap, each cell
    RUNS times with run I of every cell before run I+1."""
    a = cv.parse_args(["--runs", "3"])
    lines = cv.plan_lines(a)
    kinds = ptwalk_abi.contract().kinds
    assert {"clear_refs", "smaps", "smaps_rollup", "pagemap", "pagemap_scan"} <= set(kinds)
    ncells = len(kinds) * 3 * 2
    assert len(lines) == 3 * ncells
    seen = set()
    for i, line in enumerate(lines):
        name, *args = line.split()
        opt = dict(zip(args[::2], args[1::2]))
        assert name == f"{opt['--scanner']}-{opt['--backing']}-{opt['--fault-region']}-" \
                       f"{i // ncells + 1}", line
        assert opt["--victims"] == "read,fault,mmap"
        seen.add((opt["--scanner"], opt["--backing"], opt["--fault-region"]))
    assert seen == {(k, b, p) for k in kinds for b in ("anon", "thp", "shmem")
                    for p in ("below", "above")}


@pytest.mark.parametrize("args", [
    ["--runs", "2"],                # compare tests nothing below 3
    ["--runs", "x"],
    ["--clocks", "wallclock"],
    ["--clocks", ","],
    ["--jobs", "9"],
    ["--timeout", "0"],
    ["--size", "1 G"],
    ["--bogus"],
    ["--reuse", "--out", "EMPTY"],
])
def test_bad_input(args: list[str], tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    args = [str(tmp_path / "empty") if x == "EMPTY" else x for x in args]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "o")]
    r = _run(*args)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cross-version: error: "), r.stderr


# vm: it needs ptwalk.ko of the matrix kernels, which make test builds beside
# pytest-host (module-matrix), so it runs with the VM stage
@pytest.mark.vm
def test_dry_run_names_every_boot(tmp_path: Path) -> None:
    """Four boots (6.1 and 6.12 of one flavour, icount and real time, TCG)
    and the host run, each with the same plan; nothing boots."""
    cfg = config.load()
    for m in cv.SERIES.values():
        ks, missing = cfg.matrix(m)
        k = next((k for k in ks if k.name == "cloud-amd64"), None)
        if k is None or k.ko is None:
            skip_or_fail(f"{m}: no cloud-amd64 kernel with ptwalk.ko built "
                         f"(make module-matrix): {'; '.join(missing)}")
    r = _run("--out", str(tmp_path / "o"), "--dry-run")
    assert r.returncode == 0, r.stderr
    boots = [x for x in r.stdout.splitlines() if ": " in x and not x.startswith("plan:")]
    assert [b.split(":", 1)[0] for b in boots] == ["6.1-icount", "6.12-icount",
                                                   "6.1-realtime", "6.12-realtime", "host"]
    for b in boots[:4]:
        clock = b.split(":", 1)[0].split("-")[1]
        assert f"--accel tcg --clock {clock}" in b and "cloud-amd64" in b, b
        assert b.endswith("/ptwalk/plan.txt"), b
    assert "cross-version.sh none build/ptwalk" in boots[4]
    assert (tmp_path / "o" / "plan.txt").read_text().count("\n") == 3 * len(cv.cells())
    assert not (tmp_path / "o" / "vm").exists()


def _side(out: Path, side: str, clock: str, slow_cell: str, factor: float) -> None:
    """Three runs of two cells under CLOCK; SLOW_CELL's walks cost FACTOR
    times more per PTE."""
    d = cv.side_dir(out, side)
    d.mkdir(parents=True)
    rng = random.Random(side)
    vm = {"accel": "tcg", "clock": clock, "cpu": "max,la57=off", "qemu": "10.0.2"}
    for cell in ("clear_refs-anon-below", "smaps-anon-below"):
        for i in range(1, 4):
            doc = synthetic.make_result(
                rng=rng, profile=cell.split("-")[0], backing="anon", size_bytes=16 << 20,
                ptes=4096, walks=6, spread=0.01,
                ns_per_pte=30.0 * (factor if cell == slow_cell else 1.0))
            doc.setdefault("host", {})["vm"] = vm
            synthetic.write(doc, d / f"{cell}-{i}.json")


def test_reuse_compares_each_clock_and_flags_the_change(tmp_path: Path) -> None:
    """--reuse: 6.1 against 6.12 per clock and placement with
    ptwalk-compare; a cell 2x slower per PTE on 6.12 is the one flagged
    row; commands.sh holds the compares as run."""
    out = tmp_path / "o"
    _side(out, "6.1-icount", "icount", "", 1.0)
    _side(out, "6.12-icount", "icount", "clear_refs-anon-below", 2.0)
    r = _run("--reuse", "--out", str(out), "--clocks", "icount", "--no-host")
    assert r.returncode == 0, r.stdout + r.stderr
    flagged = json.loads((out / "flagged.json").read_text())
    assert [(f["pair"], f["metric"], f["verdict"]) for f in flagged
            if f["metric"].endswith("ns/PTE")] == \
        [("icount-below", "walk clear_refs ns/PTE", "REGRESSION")], flagged
    row = next(f for f in flagged if f["metric"] == "walk clear_refs ns/PTE")
    assert 90 < row["change_pct"] < 110 and row["q"] < 0.05, row
    assert "icount-below" in (out / "flagged.md").read_text()
    # the victims' worst waits, side by side (synthetic: 5 ms during walks)
    vt = (out / "victims.md").read_text()
    assert "| icount-below | clear_refs/anon/16M/mmap |" in vt, vt
    assert "ms |" in vt
    assert "REGRESSION" in (out / "compare" / "icount-below.txt").read_text()
    cmds = (out / "commands.sh").read_text()
    assert "scripts/ptwalk-compare" in cmds and "--vs" in cmds
    assert cmds.count("ptwalk-compare") == 1  # below; no "above" results
    assert "nothing compared" in (out / "compare" / "icount-above.txt").read_text()
    counts = json.loads((out / "runs.json").read_text())
    assert counts["6.1-icount"]["complete"] == 6 and not counts["6.1-icount"]["not_complete"]


def test_reference_set_compares_to_its_own_flags(tmp_path: Path) -> None:
    """results/reference/cross-version: the kept result sets, compared
    again with --reuse, flag exactly the rows its report explains."""
    import shutil
    ref = ROOT / "results" / "reference" / "cross-version"
    out = tmp_path / "cv"
    shutil.copytree(ref, out, ignore=shutil.ignore_patterns("compare", "commands.sh"))
    r = _run("--reuse", "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    got = json.loads((out / "flagged.json").read_text())
    want = json.loads((ref / "flagged.json").read_text())
    assert [(f["pair"], f["scenario"], f["metric"], f["verdict"]) for f in got] == \
        [(f["pair"], f["scenario"], f["metric"], f["verdict"]) for f in want]
    assert want, "the reference set flags the clear_refs rows its README explains"
    readme = (ref / "README.md").read_text()
    for f in want:
        assert f"{f['change_pct']:+.1f}%" in readme, f
    # PAGEMAP_SCAN is absent on 6.1: its runs are the only ones missing
    runs = json.loads((out / "runs.json").read_text())
    for side in ("6.1-icount", "6.1-realtime"):
        assert runs[side]["not_complete"] and all(
            k.startswith("pagemap_scan-") for k in runs[side]["not_complete"]), runs[side]
