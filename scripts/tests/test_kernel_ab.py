# SPDX-License-Identifier: GPL-2.0
"""make kernel-ab (scripts/kernel-ab.sh, scripts/kernel_ab.py): the kernel
build stays out of make test; here are its argument handling, the patch and
config fragment it ships, and its boot-and-compare part on the two stock
kernels Debian ships (6.1 cloud has the smaps_rollup skip, 6.12 cloud has
the fix, 6d065f507d82)."""
from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import kernel_ab
from ptwalk_report import results as res
from ptwalk_report import synthetic
from ptwalk_vm import config
from ptwalk_vm.pytest_plugin import BOOT_SLOTS, skip_or_fail, vm_unavailable

ROOT = Path(__file__).resolve().parents[2]
SH = ROOT / "scripts" / "kernel-ab.sh"
PY = ROOT / "scripts" / "kernel_ab.py"
REF = ROOT / "results" / "reference" / "smaps-rollup-backport"
FRAG = ROOT / "scripts" / "kernel" / "ptwalk.config"
SRC = Path("/usr/src/linux-source-6.1.tar.xz")


def _patch() -> Path:
    ps = sorted(REF.glob("0001-*.patch"))
    assert len(ps) == 1, ps
    return ps[0]


def _one_line_error(r: subprocess.CompletedProcess, prog: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: "), r.stderr


@pytest.mark.parametrize("args", [
    [],
    ["/nonexistent.patch"],
    ["scripts/kernel/ptwalk.config"],            # a file, but no diff in it
    ["--jobs", "0", "PATCH"],
    ["--jobs", "x", "PATCH"],
    ["--only", "boot", "PATCH"],
    ["--bogus", "PATCH"],
    ["--dir"],
    ["PATCH", "PATCH"],
    ["--expect", "fixed", "PATCH"],
    ["--expect"],
    ["--src", "bogus", "PATCH"],                 # neither a tarball nor a source's name
    ["--src", "linux-source-9.9", "PATCH"],      # a name no package installed
    ["--src", "/nonexistent.tar.xz", "PATCH"],
])
def test_script_bad_input(args: list[str]) -> None:
    args = [str(_patch()) if a == "PATCH" else a for a in args]
    r = subprocess.run(["sh", str(SH), *args], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    _one_line_error(r, "kernel-ab")


def test_script_run_without_build(tmp_path: Path) -> None:
    """--only run on a dir no build filled: says so, boots nothing."""
    r = subprocess.run(["sh", str(SH), "--only", "run", "--dir", str(tmp_path), str(_patch())],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    _one_line_error(r, "kernel-ab")
    assert "build first" in r.stderr


@pytest.mark.parametrize("args", [
    [],                                                   # no kernels
    ["--before", "/nonexistent", "--after", "IMG"],
    ["--before", "IMG", "--after", "IMG", "--runs", "0"],
    ["--before", "IMG", "--after", "IMG", "--runs", "two"],
    ["--before", "IMG", "--after", "IMG", "--timeout", "-1"],
    ["--before", "IMG", "--after", "IMG", "--scenarios", "rollup_alias,nope"],
    ["--before", "IMG", "--after", "IMG", "--scenarios", "clear_refs",
     "--expect", "skip-fix"],                             # no skip figure
    ["--before", "IMG", "--after", "IMG", "--expect", "fixed"],
    ["--before", "IMG", "--after", "IMG", "--before-ko", "/nonexistent.ko"],
    ["--before", "IMG", "--after", "IMG", "--accel", "xen"],
    ["--reuse", "--out", "EMPTY"],
])
def test_driver_bad_input(args: list[str], tmp_path: Path) -> None:
    img = tmp_path / "bzImage"
    img.write_bytes(b"not booted")
    (tmp_path / "empty").mkdir()
    args = [str(img) if a == "IMG" else str(tmp_path / "empty") if a == "EMPTY" else a
            for a in args]
    r = subprocess.run([sys.executable, str(PY), *args, "--out", str(tmp_path / "o")]
                       if "--out" not in args else [sys.executable, str(PY), *args],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    _one_line_error(r, "kernel-ab")


def test_skip_figures_count_walks_and_module(tmp_path: Path) -> None:
    """The skip figure: walks of rollup_alias runs only; a walk the module
    did not confirm is a disagreement, not a skip to believe."""
    def doc(walks: list[dict], confirmed: int) -> dict:
        return synthetic.minimal(walks, validation={"walks": {
            "short_after_yielding_lock": confirmed, "agree": True}})
    w_ok = {"lock_acquisitions": 1}
    w_yield = {"lock_acquisitions": 3}
    w_skip = {"lock_acquisitions": 2, "incomplete": "short"}
    rs = [res.parse(tmp_path / "rollup_alias-1.json", doc([w_ok, w_yield, w_skip], 1)),
          res.parse(tmp_path / "rollup_alias-2.json", doc([w_skip, w_skip], 1)),
          res.parse(tmp_path / "clear_refs-1.json", doc([w_skip], 1))]
    f = kernel_ab.skip_figures(rs)
    assert (f["runs"], f["walks"], f["yielded"], f["skipped"]) == (2, 5, 4, 3)
    assert f["module_confirmed"] == 2
    assert f["module_disagrees"] == ["rollup_alias-2.json"]
    assert [x["skipped"] for x in f["per_run"]] == [1, 2]


def test_fragment_holds_the_module_requirements() -> None:
    """Every option dkms needs for ptwalk.ko is set in the shipped fragment."""
    frag = FRAG.read_text()
    dkms = (ROOT / "module" / "dkms.conf").read_text()
    m = re.search(r'BUILD_EXCLUSIVE_CONFIG="([^"]+)"', dkms)
    assert m, dkms
    need = m.group(1).split()
    assert need, dkms
    for opt in need + ["CONFIG_MODULE_UNLOAD", "CONFIG_SERIAL_8250_CONSOLE",
                       "CONFIG_BLK_DEV_INITRD", "CONFIG_PROC_PAGE_MONITOR"]:
        assert re.search(rf"^{opt}=y$", frag, re.M), f"{opt} not =y in {FRAG}"


def test_patch_is_kernel_format_and_applies(tmp_path: Path) -> None:
    text = _patch().read_text()
    head = text.split("\n---\n", 1)[0]
    assert re.search(r"^From [0-9a-f]{40} ", text), "no mbox From line"
    assert re.search(r"^Subject: \[PATCH 6\.1\.y\] mm: /proc/pid/smaps_rollup: ", text, re.M)
    assert "commit 6d065f507d82307d6161ac75c025111fb8b08a46 upstream." in head
    assert "Signed-off-by" not in text
    assert re.search(r"^diff --git a/fs/proc/task_mmu\.c b/fs/proc/task_mmu\.c$", text, re.M)
    if not SRC.is_file():
        pytest.skip(f"{SRC} not installed (scripts/deps.sh kernel): cannot apply the patch")
    # one file of it: the one the patch changes
    subprocess.run(["tar", "-C", str(tmp_path), "-xf", str(SRC),
                    "linux-source-6.1/fs/proc/task_mmu.c"], check=True, timeout=300)
    tree = tmp_path / "linux-source-6.1"
    r = subprocess.run(["patch", "-p1", "-s", "-i", str(_patch())], cwd=tree,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    src = (tree / "fs/proc/task_mmu.c").read_text()
    body = src[src.index("static int show_smaps_rollup("):]
    body = body[:body.index("empty_set:")]
    # the VMA found after the relock is gathered before `continue`
    assert re.search(r"if \(vma->vm_start >= last_vma_end\) \{\s*smap_gather_stats\(vma, &mss, 0\);"
                     r"\s*last_vma_end = vma->vm_end;\s*continue;", body), body


# --- boot and compare, on Debian's stock kernels --------------------------

def _stock(cfg: config.Config, matrix: str) -> config.Kernel:
    ks, missing = cfg.matrix(matrix)
    for k in ks:
        if k.name == "cloud-amd64":
            return k
    skip_or_fail(f"no cloud-amd64 kernel in matrix {matrix}: {'; '.join(missing)}")
    raise AssertionError  # not reached


@pytest.mark.vm
def test_boot_and_compare_stock_kernels(tmp_path: Path) -> None:
    """kernel_ab.py, as make kernel-ab runs it, on 6.1 cloud ("before", the
    bug) and 6.12 cloud ("after", the fix): the same code must report walks
    skipping a VMA before and none after. One run of the skip scenario per
    kernel keeps it under ~3 minutes (two TCG boots)."""
    cfg = config.load()
    before, after = _stock(cfg, "debian-6.1"), _stock(cfg, "debian-6.12")
    for k in (before, after):
        why = vm_unavailable(cfg, k)
        if why:
            skip_or_fail(why)
        if k.ko is None:
            pytest.fail(f"ptwalk.ko is not built for {k.release} (make module-matrix)")
    if not (ROOT / "build" / "ptwalk").is_file():
        pytest.fail("build/ptwalk is not built (make build)")
    out = tmp_path / "ab"
    with BOOT_SLOTS:  # its two guests one after the other, in a slot of the session's
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, str(PY), "--before", str(before.image),
                            "--before-ko", str(before.ko), "--after", str(after.image),
                            "--after-ko", str(after.ko), "--runs", "1",
                            "--scenarios", "rollup_alias", "--expect", "skip-fix",
                            "--out", str(out)],
                           cwd=ROOT, capture_output=True, text=True, timeout=600)
        took = time.monotonic() - t0
    print(r.stdout, r.stderr[-3000:], f"took {took:.0f} s")
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    doc = json.loads((out / "verdict.json").read_text())
    sb, sa = doc["skips"]["before"], doc["skips"]["after"]
    assert doc["release"] == {"before": [before.release], "after": [after.release]}
    assert sb["skipped"] > 0 and sb["module_confirmed"] == sb["skipped"], sb
    assert sa["skipped"] == 0 and sa["yielded"] > 0, sa
    assert doc["fix_shown"] and doc["ok"] and not doc["problems"], doc["problems"]
    assert f"{sb['skipped']} of {sb['walks']} walks skipped a VMA" in r.stdout
    assert "VERDICT: FIX SHOWN" in r.stdout
    # --reuse evaluates the saved sets again, offline, to the same verdict
    r2 = subprocess.run([sys.executable, str(PY), "--reuse", "--expect", "skip-fix",
                         "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                        timeout=120)
    assert r2.returncode == 0 and r2.stdout == r.stdout, r2.stdout + r2.stderr
    assert took < 300, f"boot-and-compare took {took:.0f} s"


def _ab_sets(out: Path, after_ns_per_pte: float) -> None:
    """Four clear_refs runs a side, under out/vm/SIDE/results as a boot
    leaves them: before at 30 ns/PTE, after at AFTER_NS_PER_PTE."""
    for side, npp, seed in (("before", 30.0, 11), ("after", after_ns_per_pte, 12)):
        rng = random.Random(seed)
        for i in range(1, 5):
            synthetic.write(synthetic.make_result(rng=rng, ns_per_pte=npp, spread=0.02,
                                                  release="7.3.4-ab-" + side),
                            out / "vm" / side / "results" / f"clear_refs-{i}.json")


@pytest.mark.parametrize("after_npp,rc,verdict", [
    (30.0, 0, "VERDICT: NO CHANGE"),     # the same walks: nothing moved
    (36.0, 1, "VERDICT: CHANGED"),       # +20% ns/PTE: compare says REGRESSION
])
def test_no_change_names_what_moved(tmp_path: Path, after_npp: float, rc: int,
                                    verdict: str) -> None:
    """--expect no-change (the default, for any patch, e.g. on 7.3 where no
    walk skips): quiet when the two sides are alike, and a moved compare
    verdict is a finding, named, exit 1. No rollup_alias run is needed."""
    _ab_sets(tmp_path, after_npp)
    r = subprocess.run([sys.executable, str(PY), "--reuse", "--out", str(tmp_path)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == rc, r.stdout + r.stderr
    assert verdict in r.stdout, r.stdout
    doc = json.loads((tmp_path / "verdict.json").read_text())
    assert doc["expect"] == "no-change" and doc["ok"] == (rc == 0)
    assert "skipped a VMA" not in r.stdout       # no rollup_alias runs, no skip line
    if rc:
        assert [m["verdict"] for m in doc["other_compare_changes"]] == ["REGRESSION"], doc
        assert any(p.startswith("compare verdict changed: ") for p in doc["problems"])
    # the same sets asked the backport's question: no skip before, not shown
    r2 = subprocess.run([sys.executable, str(PY), "--reuse", "--expect", "skip-fix",
                         "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                        timeout=120)
    assert r2.returncode == 1 and "VERDICT: FIX NOT SHOWN" in r2.stdout, r2.stdout


def test_upstream_text_names_incomplete_walks(tmp_path: Path) -> None:
    """The finding a maintainer acts on: `ptwalk report --upstream` says how
    many walks skipped VMAs, how many after relocking, and what the module
    counted; a run without such walks has no such block."""
    import random

    from ptwalk_report import synthetic
    from ptwalk_report.upstream import render_upstream
    doc = synthetic.make_result(rng=random.Random(3), profile="smaps_rollup", backing="alias",
                                size_bytes=256 << 20, ptes=65536, walks=6, ns_per_pte=100.0,
                                spread=0.01)
    plain = render_upstream(res.load([synthetic.write(doc, tmp_path / "a.json")])[0])
    assert "Incomplete walks" not in plain
    why = "smaps_rollup reported Rss 255.1 MiB of the workload's 259.1 MiB: the kernel skipped VMAs"
    for w in doc["walks"][:2]:
        w.update(incomplete=why, lock_acquisitions=2)
    doc["walk_summary"] = {"smaps_rollup": {"count": 6, "ptes": 65536, "incomplete": 2}}
    doc.setdefault("validation", {})["walks"] = {"short_after_yielding_lock": 2, "agree": True}
    out = render_upstream(res.load([synthetic.write(doc, tmp_path / "b.json")])[0])
    assert ("smaps_rollup: 2 of 6 walks covered less than the workload (2 of them\n"
            "    after taking mmap_lock again); ptwalk.ko's count of such walks: 2") in out, out
    assert "e.g. smaps_rollup reported Rss 255.1 MiB" in out
    assert max(len(x) for x in out.splitlines()) <= 72


def test_budget_diff_counts_only_changes_with_a_fail() -> None:
    """PASS <-> SKIP is a budget judged on one side only (one boot saw too
    few victim operations for a p99): a note. Any change to or from FAIL is
    a changed verdict. INFO lines never count."""
    from ptwalk_report import budgets as b

    def v(budget: str, verdict: str, scenario: str = "s") -> b.Verdict:
        return b.Verdict(budget, scenario, verdict, "fig", "lim")
    before = [v("p99", b.SKIP), v("ns", b.PASS), v("stall", b.PASS), v("stall", b.INFO),
              v("gone", b.FAIL), v("same", b.FAIL)]
    after = [v("p99", b.PASS), v("ns", b.FAIL), v("stall", b.PASS), v("same", b.FAIL)]
    changed, one_side = kernel_ab.budget_diff(before, after)
    assert [(c["budget"], c["before"], c["after"]) for c in changed] == \
        [("gone", "FAIL", "-"), ("ns", "PASS", "FAIL")]
    assert [(o["budget"], o["before"], o["after"]) for o in one_side] == [("p99", "SKIP", "PASS")]


DEBUG_SH = ROOT / "scripts" / "kernel-debug.sh"
LIB = ROOT / "scripts" / "kernel" / "lib.sh"
SRC73 = Path("/var/lib/ptwalk/kernels/usr/src/linux-source-7.3.tar.xz")
SRC72 = Path("/var/lib/ptwalk/kernels/usr/src/linux-source-7.2.tar.xz")


@pytest.mark.parametrize("args", [
    ["--jobs", "0"],
    ["--only", "boot"],
    ["--bogus"],
    ["--dir"],
    ["--src", "/nonexistent.tar.xz"],
])
def test_debug_script_bad_input(args: list[str]) -> None:
    r = subprocess.run(["sh", str(DEBUG_SH), *args], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    _one_line_error(r, "kernel-debug")


def _lib(call: str) -> subprocess.CompletedProcess:
    script = (f'PROJECT={ROOT}; die() {{ echo "die: $*" >&2; exit 2; }}; '
              f'fail() {{ echo "fail: $*" >&2; exit 1; }}; . {LIB}; {call}')
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=300)


def _kconfig_tree(tmp_path: Path, voluntary_depends: str, lazy: bool) -> Path:
    """A tree with only the kernel/Kconfig.preempt entries the choice reads."""
    k = tmp_path / "kernel"
    k.mkdir(parents=True)
    text = ("choice\n\tprompt \"Preemption Model\"\n\n"
            "config PREEMPT_VOLUNTARY\n\tbool \"Voluntary\"\n" + voluntary_depends +
            "\tdepends on !ARCH_NO_PREEMPT\n\n"
            "config PREEMPT\n\tbool \"Preemptible\"\n\n")
    if lazy:
        text += "config PREEMPT_LAZY\n\tbool \"Lazy\"\n\tdepends on ARCH_HAS_PREEMPT_LAZY\n\n"
    (k / "Kconfig.preempt").write_text(text + "endchoice\n")
    return tmp_path


@pytest.mark.parametrize("depends,lazy,want", [
    # 7.x: x86 has PREEMPT_LAZY, and voluntary is not offered beside it
    ("\tdepends on !ARCH_HAS_PREEMPT_LAZY\n", True, "preempt-lazy.config"),
    # 6.13-6.x: PREEMPT_LAZY exists, voluntary still offered
    ("", True, "preempt-voluntary.config"),
    # 6.1, 6.12: no PREEMPT_LAZY
    ("", False, "preempt-voluntary.config"),
])
def test_preempt_fragment_follows_the_trees_kconfig(tmp_path: Path, depends: str, lazy: bool,
                                                    want: str) -> None:
    r = _lib(f"kernel_preempt_fragment {_kconfig_tree(tmp_path, depends, lazy)}")
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.strip()) == ROOT / "scripts" / "kernel" / want
    assert Path(r.stdout.strip()).is_file()
    assert _lib(f"kernel_preempt_fragment {tmp_path / 'none'}").returncode == 1


def test_fragments_hold_one_preemption_model_each() -> None:
    """ptwalk.config names no preemption model (7.x has no voluntary on
    x86, and olddefconfig would drop it); each model's fragment names one."""
    kdir = ROOT / "scripts" / "kernel"
    assert not re.search(r"^CONFIG_PREEMPT", FRAG.read_text(), re.M)
    for name, opt in (("preempt-voluntary.config", "CONFIG_PREEMPT_VOLUNTARY=y"),
                      ("preempt-lazy.config", "CONFIG_PREEMPT_LAZY=y")):
        sets = re.findall(r"^CONFIG_\w+=.*$", (kdir / name).read_text(), re.M)
        assert sets == [opt], (name, sets)
    debug = (kdir / "debug.config").read_text()
    for opt in ("DEBUG_PREEMPT", "PROVE_LOCKING", "DEBUG_ATOMIC_SLEEP", "KASAN"):
        assert re.search(rf"^CONFIG_{opt}=y$", debug, re.M), opt


@pytest.mark.parametrize("tarball,tree,want", [
    (SRC, "linux-source-6.1", "preempt-voluntary.config"),
    (SRC73, "linux-source-7.3", "preempt-lazy.config"),
    (SRC72, "linux-source-7.2", "preempt-lazy.config"),
])
def test_packaged_sources_name_their_tree_and_model(tmp_path: Path, tarball: Path, tree: str,
                                                    want: str) -> None:
    if tarball in (SRC73, SRC72) and not tarball.exists():
        # only make kernel-debug and kernel-ab SRC= unpack them; 6.1's comes
        # with the build group, so its absence fails below
        group = "kernel-src-7.3" if tarball == SRC73 else "kernel-src-7.2"
        pytest.skip(f"{tarball} not unpacked (scripts/deps.sh {group})")
    r = _lib(f"kernel_tree_name {tarball}")
    assert r.returncode == 0 and r.stdout.strip() == tree, (r.stdout, r.stderr)
    subprocess.run(["tar", "-C", str(tmp_path), "-xf", str(tarball),
                    f"{tree}/kernel/Kconfig.preempt"], check=True, timeout=300)
    r = _lib(f"kernel_preempt_fragment {tmp_path / tree}")
    assert r.returncode == 0 and Path(r.stdout.strip()).name == want, (r.stdout, r.stderr)
    bad = tmp_path / "not-a-kernel.tar"
    (tmp_path / "x").mkdir()
    subprocess.run(["tar", "-C", str(tmp_path / "x"), "-cf", str(bad), "."], check=True)
    assert _lib(f"kernel_tree_name {bad}").returncode == 2


REF73 = ROOT / "results" / "reference" / "kernel-ab-7.3"


def test_saved_7_3_runs_judged_again(tmp_path: Path) -> None:
    """The 7.3 reference (results/reference/kernel-ab-7.3): the patch that
    slows smaps_pte_range() is named on both smaps_rollup scenarios and
    the smaps_rollup ns/PTE budget, clear_refs does not move; the A/A of
    the unpatched kernel is quiet. Judged again offline by today's code."""
    for run, rc in (("run-patch", 1), ("run-aa", 0)):
        out = tmp_path / run
        shutil.copytree(REF73 / run, out)
        r = subprocess.run([sys.executable, str(PY), "--reuse", "--out", str(out)], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == rc, r.stdout + r.stderr
        doc = json.loads((out / "verdict.json").read_text())
        assert doc["release"]["before"] == ["7.3.4-ab-before"]
        moved = {m["scenario"]: m["verdict"] for m in doc["other_compare_changes"]}
        if rc:
            assert moved == {"smaps_rollup/alias/256M/mmap": "REGRESSION",
                             "smaps_rollup/anon/64M/mmap": "REGRESSION"}, moved
            assert [(c["budget"], c["before"], c["after"]) for c in doc["budget_changes"]] \
                == [("walk-ns-per-entry[smaps_rollup]", "PASS", "FAIL")]
            assert "VERDICT: CHANGED" in r.stdout
        else:
            assert not moved and not doc["budget_changes"] and not doc["problems"]
            assert "VERDICT: NO CHANGE" in r.stdout
        # the saved verdict is what today's code says of the saved sets
        assert r.stdout == (REF73 / run / "verdict.txt").read_text()
    # two views of the patch's cost agree: the walk's ns/PTE (its duration
    # over its PTE count) and its mmap_lock hold (the module's tracepoint
    # probes) grew by the same factor in each smaps_rollup scenario
    c = json.loads((tmp_path / "run-patch" / "compare.json").read_text())
    for sc in c["scenarios"]:
        rows = {r["metric"]: r for r in sc["rows"]}
        if not sc["scenario"].startswith("smaps_rollup/"):
            continue
        f_pte = 1 + rows["walk smaps_rollup ns/PTE"]["change_pct"] / 100
        f_hold = 1 + rows["walk smaps_rollup lock hold"]["change_pct"] / 100
        assert f_pte > 4 and 0.9 < f_pte / f_hold < 1.1, (sc["scenario"], f_pte, f_hold)
