"""A/A, live: one pair of result sets measured now on this host with the
QUICK=1 run settings (128M, 100ms interval, 800ms, victims read, fault and
mmap; 3 runs a scenario as in `QUICK=1 make qualify`), set A then set B,
compared with `ptwalk compare` as a user would. The same kernel twice must
not get a verdict of change. About a minute; `make bench` runs ten full
QUICK qualify pairs (scripts/bench_aa.py)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PTWALK = REPO / "build" / "ptwalk"
COMPARE = REPO / "scripts" / "ptwalk-compare"
PROFILES = ("clear_refs", "smaps_rollup", "pagemap_scan")
REPEATS = 3


def _set(out: Path) -> None:
    for profile in PROFILES:
        for i in range(1, REPEATS + 1):
            argv = [str(PTWALK), "run", "--size", "128M", "--backing", "anon",
                    "--scanner", profile, "--interval", "100ms", "--duration", "800ms",
                    "--victims", "read,fault,mmap", "--quiet",
                    "--out", str(out / f"{profile}-anon-128M-r{i}.json")]
            p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
            assert p.returncode == 0, f"{' '.join(argv)}: {p.stderr.strip()}"


def test_live_aa_pair_no_verdict_of_change(tmp_path: Path) -> None:
    if not PTWALK.exists():
        pytest.fail(f"{PTWALK} missing: run 'make build' first")
    for side in ("A", "B"):
        (tmp_path / side).mkdir()
        _set(tmp_path / side)
    p = subprocess.run([sys.executable, str(COMPARE), str(tmp_path / "A"), str(tmp_path / "B"),
                        "--json", str(tmp_path / "c.json")],
                       capture_output=True, text=True, timeout=300)
    print(p.stdout)
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads((tmp_path / "c.json").read_text())
    assert doc["verdict"] == "NO SIGNIFICANT CHANGE", p.stdout
    rows = [r for s in doc["scenarios"] for r in s["rows"]]
    tested = [r for r in rows if r["tested"]]
    # every scenario was measured on both sides, and walk metrics were
    # actually tested (3 runs a side: Welch on the runs' medians; a run that
    # got fewer than 5 walks on a busy host leaves its scenario untested)
    assert len(doc["scenarios"]) == len(PROFILES)
    assert all(r["test"] == "Welch" and r["metric"].startswith("walk ") for r in tested)
    assert len(tested) >= 3, p.stdout
    assert not [r for r in rows if r["significant"]], p.stdout
    assert "overall: NO SIGNIFICANT CHANGE" in p.stdout
