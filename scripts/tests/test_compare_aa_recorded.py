"""A/A statistics on recorded QUICK=1 qualify sets (data/results/aa: four
back-to-back qualifies, four scenarios each), through the same code as
`make bench` (scripts/bench_aa.py): no pair gets a verdict, the A/A
calibration it writes is what ptwalk compare reads, and a calibrated noise
level keeps a drift-sized change from being flagged."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import bench_aa  # noqa: E402
from ptwalk_report import compare  # noqa: E402
from ptwalk_report import results as res  # noqa: E402

AA = Path(__file__).resolve().parent / "data" / "results" / "aa"
TOOL = Path(__file__).resolve().parents[1] / "ptwalk-compare"


def _pairs() -> list[tuple[list[res.Result], list[res.Result]]]:
    return [(res.load([AA / "s0"]), res.load([AA / "s1"])),
            (res.load([AA / "s2"]), res.load([AA / "s3"]))]


def test_recorded_pairs_quiet_through_bench_code(capsys: pytest.CaptureFixture[str]) -> None:
    bad, flagged, tested = bench_aa.evaluate(_pairs(), {}, "runs only")
    out = capsys.readouterr().out
    assert tested >= 20, out    # walk metrics of 4 scenarios x 2 pairs were tested
    assert bad == 0 and flagged == 0, out


def test_calibration_round_trip_and_effect(tmp_path: Path) -> None:
    cal = tmp_path / "aa-noise.json"
    bench_aa.calibrate(_pairs(), cal, "test")
    doc = json.loads(cal.read_text())
    assert doc["schema"] == compare.NOISE_SCHEMA and doc["pairs"] == 2
    noise = compare.load_noise(cal)
    key = "clear_refs/anon/128M/fault,mmap,read|walk clear_refs ns/PTE"
    assert key in noise
    # the calibration is the largest |change| of the pairs
    changes = []
    for a, b in _pairs():
        c = compare.compare_sets(a, b)
        changes += [abs(r.change_pct) for s in c.scenarios for r in s.rows
                    if f"{s.scenario}|{r.metric}" == key and r.change_pct is not None]
    assert noise[key] == pytest.approx(max(changes), abs=0.05)
    # a row that beats the runs' own noise but not the calibration is not flagged
    sa = compare.Series("walk clear_refs ns/PTE", "ns/PTE", "run", [100.0, 101.0, 99.0, 100.5],
                        walks=[8] * 4)
    sb = compare.Series("walk clear_refs ns/PTE", "ns/PTE", "run", [120.0, 121.0, 119.0, 120.5],
                        walks=[8] * 4)
    scen = key.split("|")[0]
    row = compare.make_row(scen, sa, sb, alpha=0.05, min_change_pct=5.0,
                           noise={key: 25.0}, seed=1, iterations=200)
    compare.decide([row], 0.05)
    assert row.q is not None and row.q < 0.05 and row.noise_from == "A/A"
    assert not row.significant and row.verdict == compare.NO_CHANGE


def test_bad_noise_file_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "n.json"
    bad.write_text('{"schema": "other/1"}')
    p = subprocess.run([sys.executable, str(TOOL), str(AA / "s0"), str(AA / "s1"),
                        "--noise", str(bad)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    assert "not a ptwalk.aa-noise/1 document" in p.stderr
