# SPDX-License-Identifier: GPL-2.0
"""The working-set table's rows (scripts/ptwalk_report/working_set_table.py)
from results shaped as `ptwalk run --working-set` writes them, its
command's bad input, and the kept reference set against its own runs."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ptwalk_report import working_set_table as wt
from ptwalk_vm import table_runs

REPO = Path(__file__).resolve().parents[2]
REF = REPO / "results" / "reference" / "working-set"
MS = 1_000_000


def doc(agree: bool = True, ws: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "backend": "module", "kernel": {"release": "7.3.4+deb13-cloud-amd64"},
        "scenario": {"victims": ["mmap", "fault"]},
        "working_set": ws if ws is not None else {
            "accuracy": {"windows": 15, "within_truth": 9, "median_abs_error": 0.01,
                         "bias": -0.03, "max_abs_error": 0.2},
            "cost": {"walk_ns_p50": 4 * MS, "ns_per_gib_p50": 16e6, "core_share": 0.02}},
        "kernel_view": {"stalls": [
            {"victim": "mmap", "walker_held_ns": 3 * MS},
            {"victim": "fault", "walker_held_ns": 1 * MS, "vma_chain_ns": 5 * MS},
            {"victim": "read", "walker_held_ns": 99 * MS}]},
        "validation": {"stalls": {"agree": agree, "disagreements": ["2 of 9 explained"]}},
    }


def test_a_row_takes_each_axis_from_its_own_part() -> None:
    r = wt.row("7.3", "0.25,hot", doc())
    assert (r.windows, r.within, r.bias, r.max_abs_error) == (15, 9, -0.03, 0.2)
    assert (r.ns_per_gib, r.core_share) == (16e6, 0.02)
    # the longest walk-kept part among the run's own victims (read is not one)
    assert r.stall_ns == 6 * MS and r.view == "module" and not r.note
    text = wt.row_text(r)
    assert "9/15 within" in text and "bias -3.0%" in text and "16.0 ms/GiB" in text, text


def test_a_damon_row_has_no_stall_split() -> None:
    """damon walks nothing itself: accuracy and the kdamond's cost, and
    no walk-kept wait (there is no walk to split the waits by)."""
    ws = doc()["working_set"] | {"damon": {"kdamond_cpu_ns": 5 * MS}}
    r = wt.row("7.3", "0.25,hot", doc(ws=ws), method="damon")
    assert r.windows == 15 and r.stall_ns is None and "no walk of its own" in r.stall_note
    assert wt.row_text(r).startswith("| 7.3 | damon | 0.25,hot | 9/15 within")


def test_a_row_without_a_figure_says_why() -> None:
    assert wt.row("6.18", "0.25,hot", None, "run failed (exit 1)").note == "run failed (exit 1)"
    r = wt.row("6.1", "0.25,hot", doc(ws={"why": "no window"}))
    assert r.windows is None and r.note == "no window"
    assert "- (no window)" in wt.row_text(r)
    # stalls the victims' clocks contradict are no figure; accuracy stays
    r = wt.row("6.12", "0.5,uniform", doc(agree=False))
    assert r.windows == 15 and r.stall_ns is None and "DISAGREES" in r.stall_note


def test_the_table_is_written_with_its_rows(tmp_path: Path) -> None:
    rows = [wt.row("host", s, doc()) for s in wt.SPECS]
    rows += [wt.row("host", s, None, "not here: DAMON is in use", "damon") for s in wt.SPECS]
    text = wt.write(tmp_path, rows, "icount", "256M")
    assert text.count("\n| host | wss |") == len(wt.SPECS)
    assert text.count("\n| host | damon | ") == len(wt.SPECS)
    assert "| host | damon | 0.25,hot | - (not here: DAMON is in use) |" in text, text
    j = json.loads((tmp_path / "table.json").read_text())
    assert j["schema"] == "ptwalk.working-set-table/1" and len(j["rows"]) == 2 * len(wt.SPECS)
    assert j["methods"] == ["wss", "damon"]


@pytest.mark.parametrize("args", [["--size", "lots"], ["--reuse"], ["--series", ""]])
def test_bad_input_is_one_line(args: list[str]) -> None:
    p = subprocess.run([str(REPO / "scripts" / "ptwalk-working-set-table"), *args],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr


def test_the_reference_table_is_its_runs() -> None:
    """results/reference/working-set: the table kept is the one its runs
    give (rebuilt here from the result files), every kernel and the host
    ran every pattern of wss, and of damon where the kernel has it (else
    its row says why), and Referenced never counted over the truth."""
    j = json.loads((REF / "table.json").read_text())
    sides = sorted({r["kernel"] for r in j["rows"]})
    assert "host" in sides and len(sides) >= 4, sides
    assert len(j["rows"]) == len(sides) * len(wt.METHODS) * len(wt.SPECS)
    damon_ran = 0
    for r in j["rows"]:
        f = REF / r["kernel"] / f"{wt.file_name(r['spec'], r['method'])}.json"
        if r["method"] == "damon" and r["note"].startswith("not here: "):
            assert not f.exists() and "DAMON" in r["note"], r
            continue
        d = json.loads(f.read_text())
        again = wt.row(r["kernel"], r["spec"], d, method=r["method"])
        assert again.__dict__ == r, (r, again)
        assert r["windows"] and r["windows"] >= 10, r
        if r["method"] == "damon":
            damon_ran += 1
            continue
        for w in d["working_set"]["windows"]:
            assert w["estimate_bytes"] <= w["truth_hi_bytes"], (r["kernel"], r["spec"], w)
    assert damon_ran >= 2 * len(wt.SPECS), damon_ran  # 6.12, and 6.18 or 7.3


def test_the_host_side_runs_every_pattern(tmp_path: Path) -> None:
    """--host through scripts/vm/table-runs.sh: a result per pattern, each
    run's exit read back from its output, and the commands as run."""
    if os.geteuid() != 0:
        pytest.skip("not root: clear_refs of the workload needs it")
    out = tmp_path / "t"
    p = subprocess.run([str(REPO / "scripts" / "ptwalk-working-set-table"), "--host",
                        "--series", "", "--size", "32M", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    exits = table_runs.exits(out / "host", "working-set")
    guest = (out / "host" / "guest.txt").read_text()
    assert "damon_stat turned off" not in guest, guest  # never on a host
    for m in wt.METHODS:
        for s in wt.SPECS:
            name = wt.file_name(s, m)
            # wss runs here; damon where this host's DAMON is free
            assert exits.get(name) in (("0",) if m == "wss" else ("0", "4")), (exits, guest)
            if exits[name] == "0":
                d = json.loads((out / "host" / f"{name}.json").read_text())
                assert d["working_set"]["accuracy"]["windows"] >= 10, d["working_set"]
            else:
                assert f"| host | damon | {s} | - (not here: DAMON" in p.stdout, p.stdout
    assert "scripts/vm/table-runs.sh build/ptwalk" in (out / "commands.sh").read_text()
    assert p.stdout.count("\n| host |") == len(wt.METHODS) * len(wt.SPECS), p.stdout


def test_table_runs_refuses_an_unknown_table(tmp_path: Path) -> None:
    p = subprocess.run(["sh", str(REPO / "scripts" / "vm" / "table-runs.sh"), "ptwalk",
                        str(tmp_path), "32M", "-", "no-such-table", "smaps"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert not list(tmp_path.iterdir())
