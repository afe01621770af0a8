# SPDX-License-Identifier: GPL-2.0
"""make qualify at incident scale: scenario selection and the production-scale
summary of aliased runs."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ptwalk_report import incident, matrix  # noqa: E402
from ptwalk_report import results as res  # noqa: E402
from ptwalk_report.walk_kinds import WalkKind  # noqa: E402

GIB = 1 << 30
REPO = Path(__file__).resolve().parents[2]


def test_small_host_runs_incident_scale_aliased() -> None:
    m = matrix.load_matrix()
    scs = matrix.select(m, "default", 22 * GIB)
    inc = [s for s in scs if s.incident]
    assert {s.profile for s in inc} == {"clear_refs", "cadvisor"}
    assert all(s.backing == "alias" and s.size_mib == 100 * 1024 for s in inc)
    argv = inc[0].argv("ptwalk", Path("x.json"))
    assert argv[argv.index("--physical") + 1] == "1024M"
    assert "--calibrate-size" in argv
    # the main matrix still runs, sized to leave the incident runs their time
    main = [s for s in scs if not s.incident and not s.sweep]
    assert len(main) == 54
    est = matrix.estimate_s(m, "default", main[0].size_mib, len(main)) + \
        matrix.sweep_estimate_s(m, scs) + len(inc) * m["incident"]["estimate_s"]
    assert est <= m["modes"]["default"]["time_budget_s"] * 1.1


def test_big_host_uses_distinct_pages_and_quick_skips() -> None:
    m = matrix.load_matrix()
    inc = [s for s in matrix.select(m, "default", 1024 * GIB) if s.incident]
    assert inc and all(s.backing == "anon" for s in inc)
    assert "--physical" not in inc[0].argv("ptwalk", Path("x.json"))
    assert not [s for s in matrix.select(m, "quick", 22 * GIB) if s.incident]
    assert len([s for s in matrix.select(m, "full", 22 * GIB) if s.incident]) == 6


def test_summary_shows_raw_and_corrected(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    p = subprocess.run([str(REPO / "build/ptwalk"), "run", "--size", "1G", "--backing", "alias",
                        "--physical", "64M", "--calibrate-size", "256M", "--scanner", "cadvisor",
                        "--interval", "200ms", "--duration", "1s", "--victims", "mmap",
                        "--quiet", "--out", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    result = res.load([out])[0]
    cal = result.alias_calibration
    assert cal is not None
    rows = incident.summarize([result], min_size=GIB)
    assert {r["kind"] for r in rows} == {"smaps", "clear_refs"}
    for r in rows:
        assert r["aliased"] is True
        assert r["ptes"] >= GIB // 4096
        assert r["walks"] >= 2
        # corrected only where the calibrated sizes agree
        kind = WalkKind(r["kind"])   # incident's own row, by the kind's text
        ratio = cal.ratio[kind] if kind in cal.ratio else None
        if ratio:
            assert r["corrected_duration_p50_ns"] == pytest.approx(
                r["duration_p50_ns"] * ratio, rel=0.5)
        else:
            assert "corrected_duration_p50_ns" not in r
    text = incident.render(rows)
    assert "ALIASED" in text
    if cal.ratio:
        assert "for distinct pages" in text
    else:
        assert "uncorrected" in text
    assert incident.summarize([result]) == []  # below incident scale: not reported
    assert "no run at incident scale" in incident.render([])
