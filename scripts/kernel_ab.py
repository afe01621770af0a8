#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Boot two kernels in the VM harness, run the same scenarios in both and
compare them: did any verdict move (--expect no-change, the default, for
any patch), or did a kernel change fix smaps_rollup's skipped VMA and
nothing else move (--expect skip-fix, the 6.1 backport's question)?

  kernel_ab.py --before IMG [--before-ko KO] --after IMG [--after-ko KO]
               [--out DIR] [--runs N] [--scenarios a,b,...]
               [--expect no-change|skip-fix]
               [--accel auto|kvm|tcg] [--clock realtime|icount] [--timeout S]
  kernel_ab.py --reuse --out DIR [--expect ...]
                                   evaluate the result sets DIR already holds

Each kernel boots once (scripts/ptwalk-vm; one VM at a time) and runs
scripts/vm/kernel-ab.sh: every scenario RUNS times, interleaved, through
ptwalk.ko. The result sets land in DIR/vm/before/results and
DIR/vm/after/results. Then, with the project's own verdict code:
  - the skip figure: smaps_rollup walks of rollup_alias that yielded
    mmap_lock, and those that skipped a VMA ("incomplete"; the module's
    complete walk confirms each one);
  - the budgets (results/budgets/default.json) on each side, verdict by
    verdict;
  - ptwalk-compare BEFORE AFTER (A/A noise of results/budgets/aa-noise.json).
Written: DIR/verdict.txt, DIR/verdict.json, DIR/compare.txt, DIR/compare.json,
DIR/budgets-before.txt, DIR/budgets-after.txt.

Exit status, --expect no-change: 0 no budget or compare verdict moved and
no walk skips a VMA after that did not before; 1 one did (each is named),
or a boot failed. --expect skip-fix: 0 the fix shows (before: walks skip a
VMA; after: none) and no other verdict changed; 1 it does not, or a boot
failed. 2 bad input.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ptwalk_report import budgets, compare  # noqa: E402
from ptwalk_report import results as res  # noqa: E402

PROJECT = Path(__file__).resolve().parent.parent
SCENARIOS = ("rollup_alias", "smaps_rollup", "clear_refs", "pagemap")
DEFAULT_SCENARIOS = ("rollup_alias", "smaps_rollup", "clear_refs")
# the scenario whose walks the fix changes: its own compare rows may move
FIXED = "rollup_alias"
SIDES = ("before", "after")
EXPECTS = ("no-change", "skip-fix")


class BadInput(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise BadInput(message)  # one line, not argparse's usage block


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = _Parser(prog="kernel_ab.py", description=__doc__,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", type=Path, help="kernel image without the change")
    p.add_argument("--after", type=Path, help="kernel image with the change")
    p.add_argument("--before-ko", type=Path, help="ptwalk.ko for --before (default: by vermagic)")
    p.add_argument("--after-ko", type=Path, help="ptwalk.ko for --after (default: by vermagic)")
    p.add_argument("--out", type=Path, default=PROJECT / "build" / "kernel-ab" / "results")
    p.add_argument("--runs", default="4", help="runs of each scenario per kernel (default 4)")
    p.add_argument("--scenarios", default=",".join(DEFAULT_SCENARIOS),
                   help=f"comma-separated, of {', '.join(SCENARIOS)}; with --expect "
                   f"skip-fix it must hold {FIXED}")
    p.add_argument("--expect", choices=EXPECTS, default="no-change",
                   help="no-change (default): any moved verdict is the finding; skip-fix: "
                   "before, rollup_alias walks skip a VMA, after none, nothing else moves")
    p.add_argument("--accel", choices=("auto", "kvm", "tcg"), default="auto")
    p.add_argument("--clock", choices=("realtime", "icount"), default="icount",
                   help="guest time (default icount: TCG, repeatable; realtime for KVM)")
    p.add_argument("--timeout", default="900", help="seconds per boot (default 900)")
    p.add_argument("--reuse", action="store_true",
                   help="boot nothing: evaluate the result sets already under --out")
    a = p.parse_args(argv)
    a.scenarios = [s for s in a.scenarios.split(",") if s]
    bad = [s for s in a.scenarios if s not in SCENARIOS]
    if bad:
        raise BadInput(f"unknown scenario {bad[0]!r} (known: {', '.join(SCENARIOS)})")
    if a.expect == "skip-fix" and FIXED not in a.scenarios:
        raise BadInput(f"--expect skip-fix needs {FIXED} in --scenarios: the skip figure "
                       "comes from it")
    try:
        a.runs = int(a.runs)
        a.timeout = float(a.timeout)
    except ValueError:
        raise BadInput(f"--runs wants an integer and --timeout seconds, got "
                       f"{a.runs!r} and {a.timeout!r}") from None
    if not 1 <= a.runs <= 50:
        raise BadInput(f"--runs wants 1..50, got {a.runs}")
    if a.timeout <= 0:
        raise BadInput(f"--timeout wants seconds > 0, got {a.timeout:g}")
    if a.reuse:
        for side in SIDES:
            if not (a.out / "vm" / side / "results").is_dir():
                raise BadInput(f"--reuse: no result set {a.out / 'vm' / side / 'results'}")
        return a
    for side in SIDES:
        img = getattr(a, side)
        if img is None:
            raise BadInput(f"--{side} IMAGE is needed (or --reuse)")
        if not img.is_file():
            raise BadInput(f"--{side} {img}: not a file")
        ko = getattr(a, f"{side}_ko")
        if ko is not None and not ko.is_file():
            raise BadInput(f"--{side}-ko {ko}: not a file")
    return a


def vm_command(image: Path, ko: Path | None, *, name: str, results: Path, accel: str,
               clock: str, timeout: float, add: Sequence[str], guest: Sequence[str]
               ) -> list[str]:
    """The ptwalk-vm command line of one boot: IMAGE (with KO as ptwalk.ko)
    runs GUEST; its files land in RESULTS/NAME/results."""
    cmd = [sys.executable, str(PROJECT / "scripts" / "ptwalk-vm"), "run",
           "--kernel", str(image), "--name", name,
           "--results", str(results), "-q", "--accel", accel, "--clock", clock,
           "--timeout", f"{timeout:g}"]
    for f in add:
        cmd += ["--add", f]
    if ko is not None:
        cmd += ["--ko", str(ko)]
    return cmd + ["--", *guest]


def boot(a: argparse.Namespace, side: str) -> int:
    """One boot of one kernel: the scenarios, results under out/vm/SIDE."""
    cmd = vm_command(getattr(a, side), getattr(a, f"{side}_ko"), name=side,
                     results=a.out / "vm", accel=a.accel, clock=a.clock, timeout=a.timeout,
                     add=["scripts/vm/kernel-ab.sh"],
                     guest=["sh", "scripts/vm/kernel-ab.sh", "/ptwalk/module/ptwalk.ko",
                            "/ptwalk/build/ptwalk", str(a.runs), *a.scenarios])
    print(f"kernel-ab: booting {side}: {getattr(a, side)}", file=sys.stderr, flush=True)
    return subprocess.run(cmd, cwd=PROJECT, check=False).returncode


def skip_figures(results: list[res.Result]) -> dict[str, Any]:
    """rollup_alias walks: all, yielding mmap_lock, skipping a VMA."""
    walks = yielded = skipped = confirmed = 0
    per_run = []
    disagree = []
    for r in sorted(results, key=lambda r: r.path.name):
        if not r.path.name.startswith(FIXED + "-"):
            continue
        ws = r.walks
        y = sum(1 for w in ws if (w.lock_acquisitions or 0) > 1)
        s = sum(1 for w in ws if w.incomplete is not None)
        val = r.validation.walks if r.validation is not None else None
        c = val.short_after_yielding_lock if val is not None else None
        walks, yielded, skipped = walks + len(ws), yielded + y, skipped + s
        confirmed += c if c is not None else 0
        if c != s or val is None or not val.agree:
            disagree.append(r.path.name)
        per_run.append({"run": r.path.name, "walks": len(ws), "yielded": y, "skipped": s,
                        "module_confirmed": c})
    return {"runs": len(per_run), "walks": walks, "yielded": yielded, "skipped": skipped,
            "module_confirmed": confirmed, "module_disagrees": disagree, "per_run": per_run}


def budget_diff(before: list[budgets.Verdict], after: list[budgets.Verdict]
                ) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Budget verdicts that changed, and those judged on one side only.
    A change involves a FAIL (PASS -> FAIL, FAIL -> SKIP, ...). PASS <->
    SKIP only says one side had enough data for the budget, e.g. fewer
    than 100 victim operations during walks for a p99: a note, not a
    change. INFO lines are context, never verdicts."""
    def table(vs: list[budgets.Verdict]) -> dict[tuple[str, str], str]:
        return {(v.budget, v.scenario): v.verdict for v in vs if v.verdict != budgets.INFO}
    b, a = table(before), table(after)
    changed: list[dict[str, str]] = []
    one_side: list[dict[str, str]] = []
    for k in sorted(set(b) | set(a)):
        vb, va = b.get(k, "-"), a.get(k, "-")
        if vb == va:
            continue
        row = {"budget": k[0], "scenario": k[1], "before": vb, "after": va}
        (changed if budgets.FAIL in (vb, va) else one_side).append(row)
    return changed, one_side


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def evaluate(out: Path, expect: str = "no-change") -> tuple[int, dict[str, Any], str]:
    """Judge the two result sets under out/vm; expect is one of EXPECTS."""
    sides: dict[str, list[res.Result]] = {}
    for side in SIDES:
        d = out / "vm" / side / "results"
        try:
            sides[side] = res.load([d])
        except res.InputError as e:
            raise BadInput(f"{side}: {e}") from None
        if not any(r.usable for r in sides[side]):
            raise BadInput(f"{side}: no complete result in {d}")
    a, b = sides["before"], sides["after"]
    clocks = sorted({r.measured_on for r in a + b if r.usable})
    if len(clocks) > 1:
        raise BadInput("the two sides were measured under different clocks: "
                       + "; ".join(map(str, clocks)))
    rel = {s: sorted({r.release for r in sides[s]}) for s in SIDES}

    skips = {s: skip_figures(sides[s]) for s in SIDES}

    bl = budgets.load_budgets(PROJECT / "results" / "budgets" / "default.json")
    bv = {s: budgets.evaluate(bl, sides[s]) for s in SIDES}
    for s in SIDES:
        _write(out / f"budgets-{s}.txt", budgets.render(bv[s]))
    budget_changes, one_side = budget_diff(bv["before"], bv["after"])

    noise_file = compare.DEFAULT_NOISE if compare.DEFAULT_NOISE.exists() else None
    c = compare.compare_sets(a, b, noise=compare.load_noise(noise_file))
    ctext = compare.render(c, label_a=f"before ({', '.join(rel['before'])})",
                           label_b=f"after ({', '.join(rel['after'])})", alpha=0.05,
                           min_change_pct=5.0,
                           noise_file=os.path.relpath(noise_file, PROJECT) if noise_file
                           else "none")
    _write(out / "compare.txt", ctext)
    _write(out / "compare.json", json.dumps(compare.to_json(c), indent=1) + "\n")
    # the rollup_alias scenario's key, as compare names it
    # (for skip-fix; with no-change nothing is expected to move)
    fixed_keys = ({str(res.scenario_key(r)) for r in a + b if r.path.name.startswith(FIXED + "-")}
                  if expect == "skip-fix" else set())
    moved = [{"scenario": sc.scenario, "verdict": sc.verdict} for sc in c.scenarios
             if sc.verdict in (compare.REGRESSION, compare.IMPROVEMENT)
             and sc.scenario not in fixed_keys]
    fixed_moved = [{"scenario": sc.scenario, "verdict": sc.verdict} for sc in c.scenarios
                   if sc.scenario in fixed_keys]

    sb, sa = skips["before"], skips["after"]
    fix_shown = sb["skipped"] > 0 and sa["skipped"] == 0 and sa["yielded"] > 0
    problems = []
    has_fixed = sb["runs"] > 0 or sa["runs"] > 0
    if expect == "skip-fix":
        if not sb["walks"] or not sa["walks"]:
            problems.append("a side has no rollup_alias walk")
        if sb["skipped"] == 0:
            problems.append(f"before: no walk skipped a VMA ({sb['yielded']} of {sb['walks']} "
                            "yielded mmap_lock)")
        if sa["skipped"]:
            problems.append(f"after: {sa['skipped']} of {sa['walks']} walks still skip a VMA")
        if sa["yielded"] == 0:
            problems.append("after: no walk yielded mmap_lock, so the fix was not exercised")
    elif sa["skipped"] and not sb["skipped"]:
        problems.append(f"after: {sa['skipped']} of {sa['walks']} rollup_alias walks skip a "
                        "VMA, none did before")
    for s in SIDES:
        if skips[s]["module_disagrees"]:
            problems.append(f"{s}: walk and module disagree on skips in "
                            f"{', '.join(skips[s]['module_disagrees'])}")
    # on the scenario the change fixes, a budget that FAILed before and
    # passes after is the fix itself (runs-complete fails on walks that
    # skipped a VMA); one that starts failing is still a problem
    fixed_passes = [ch for ch in budget_changes
                    if ch["scenario"] in fixed_keys and ch["after"] == budgets.PASS]
    for ch in budget_changes:
        if ch not in fixed_passes:
            problems.append(f"budget verdict changed: {ch['budget']} on {ch['scenario']}: "
                            f"{ch['before']} -> {ch['after']}")
    for m in moved:
        problems.append(f"compare verdict changed: {m['scenario']}: {m['verdict']}")
    ok = (fix_shown or expect != "skip-fix") and not problems

    lines = [f"kernel-ab: before {', '.join(rel['before'])}  after {', '.join(rel['after'])}",
             f"measured on: {clocks[0]}"]
    for s in SIDES if has_fixed else ():
        k = skips[s]
        lines.append(f"{s:6}: smaps_rollup over 64 VMAs with a writer waiting: {k['skipped']} of "
                     f"{k['walks']} walks skipped a VMA ({k['yielded']} yielded mmap_lock; "
                     f"module confirmed {k['module_confirmed']}; {k['runs']} runs: "
                     + ", ".join(f"{x['skipped']}/{x['walks']}" for x in k["per_run"]) + ")")
    nb = {s: sum(1 for v in bv[s] if v.verdict in (budgets.PASS, budgets.FAIL)) for s in SIDES}
    lines.append(f"budgets: {nb['before']} judged before, {nb['after']} after; "
                 f"{len(budget_changes)} verdicts changed")
    for ch in fixed_passes:
        lines.append(f"  fixed: {ch['budget']} on {ch['scenario']}: {ch['before']} -> "
                     f"{ch['after']} (the scenario the change fixes)")
    for o in one_side:
        lines.append(f"  judged on one side only (not enough data on the other): {o['budget']} "
                     f"on {o['scenario']}: {o['before']} -> {o['after']}")
    lines.append("compare: " + "; ".join(f"{sc.scenario} {sc.verdict}" for sc in c.scenarios))
    if fixed_moved:
        lines.append("  (" + ", ".join(f"{m['scenario']}" for m in fixed_moved)
                     + " is the scenario the change fixes: its rows may move)")
    for pr in problems:
        lines.append(f"problem: {pr}")
    if expect == "skip-fix":
        lines.append("VERDICT: " + ("FIX SHOWN: before, walks skip a VMA; after, none; "
                                    "no other verdict changed" if ok else "FIX NOT SHOWN"))
    else:
        lines.append("VERDICT: " + ("NO CHANGE: no budget or compare verdict moved" if ok
                                    else f"CHANGED: {len(problems)} findings, each a "
                                    "problem line above"))
    text = "\n".join(lines) + "\n"
    doc = {"schema": "ptwalk.kernel-ab/1", "expect": expect, "fix_shown": fix_shown, "ok": ok,
           "release": rel, "measured_on": str(clocks[0]), "skips": skips,
           "budget_changes": budget_changes, "budget_fixed": fixed_passes,
           "budget_judged_one_side": one_side,
           "compare_verdict": c.verdict,
           "compare_scenarios": [{"scenario": sc.scenario, "verdict": sc.verdict}
                                 for sc in c.scenarios],
           "other_compare_changes": moved, "problems": problems}
    _write(out / "verdict.txt", text)
    _write(out / "verdict.json", json.dumps(doc, indent=1) + "\n")
    return (0 if ok else 1), doc, text


def main(argv: Sequence[str] | None = None) -> int:
    try:
        a = parse_args(argv)
        if not a.reuse:
            a.out.mkdir(parents=True, exist_ok=True)
            for side in SIDES:
                rc = boot(a, side)
                if rc != 0:
                    print(f"kernel-ab: {side}: the guest run failed (exit {rc}; run dir "
                          f"{a.out / 'vm' / side})", file=sys.stderr)
                    return 1
        rc, _, text = evaluate(a.out, a.expect)
    except BadInput as e:
        print(f"kernel-ab: error: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return rc


if __name__ == "__main__":
    sys.exit(main())
