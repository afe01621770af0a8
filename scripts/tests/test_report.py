"""ptwalk-report on recorded results: Markdown + PNGs, the fit and its
prediction interval, the interval guidance, kernels bars, the 72-column
mailing-list text."""
from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from ptwalk_report import fit, report, synthetic
from ptwalk_report import results as res
from ptwalk_report.upstream import render_upstream

DATA = Path(__file__).resolve().parent / "data" / "results"
TOOL = Path(__file__).resolve().parents[1] / "ptwalk-report"
SWEEP = [DATA / "sweep" / f"clear_refs-anon-{s}.json.gz" for s in ("32M", "64M", "256M")]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_fit_known_values() -> None:
    # numpy.polyfit + scipy.stats.t.ppf(0.975, 6) on the same points
    xs = [1, 2, 3, 4, 5, 6, 7, 8]
    ys = [2.1, 3.9, 6.2, 7.8, 10.1, 12.2, 13.8, 16.1]
    f = fit.fit(xs, ys)
    assert f is not None and f.model == "linear"
    assert f.a == pytest.approx(0.035714285714284026, abs=1e-9)
    assert f.b == pytest.approx(1.9976190476190483, rel=1e-12)
    y, lo, hi = f.interval(20)
    assert (lo, hi) == (pytest.approx(38.83467123565515, rel=1e-9),
                        pytest.approx(41.141519240535345, rel=1e-9))


def test_fit_single_size_is_proportional() -> None:
    f = fit.fit([1000, 1000, 1000, 1010], [30000, 33000, 27000, 30300])
    assert f is not None and f.model == "proportional" and f.a == 0.0
    y, lo, hi = f.interval(25_000_000)
    assert y == pytest.approx(25_000_000 * f.b)
    assert lo < y < hi


def test_report_on_recorded_results(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    p = subprocess.run([sys.executable, str(TOOL), *map(str, SWEEP), str(DATA / "sweep" /
                        "clear_refs-thp-256M.json.gz"), "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    md = (out / "report.md").read_text()
    for heading in ("## Walk cost", "## Extrapolation", "## Victim latency outside vs during walks",
                    "## Scan interval and page size", "## Timelines"):
        assert heading in md
    assert "| 6.18.44-fc-v595 | clear_refs | anon | 45 | 8,794-66,122 |" in md
    assert "linear" in md and "proportional" in md       # anon: 3 sizes; thp: one
    assert "| 100 GiB | 27,238,133 |" in md              # 25M+ entries at 100 GiB of 4 KiB
    assert "tracepoint: mmap_lock tracepoints" in md
    pngs = sorted(out.glob("*.png"))
    assert {p.name for p in pngs} >= {"walk_cost_anon.png", "walk_cost_thp.png",
                                      "victims_clear_refs_anon_64M_fault_mmap_read.png",
                                      "timeline_clear_refs_thp_256M_fault_mmap_read.png"}
    for png in pngs:
        assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 10_000
        assert f"]({png.name})" in md


def test_extrapolation_and_interval_figures() -> None:
    rs = res.load(SWEEP)
    g = next(c for c in report.cost_groups(rs) if c.kind == "clear_refs")
    assert g.fit is not None and g.fit.model == "linear"
    y, lo, hi = g.fit.interval(25_000_000)
    assert lo < y < hi and 1e9 < y < 1e11               # seconds, not ms or hours
    assert g.entries_at(100 << 30) == pytest.approx(27.24e6, rel=0.01)
    md = "\n".join(report._interval_section(res.group(rs), report.cost_groups(rs)))
    assert "| clear_refs/anon/256M/fault,mmap,read | mmap |" in md
    assert "T >= W * q / 1e-5" in md


def test_kernels_section_with_two_releases(tmp_path: Path) -> None:
    rng = random.Random(1)
    files = []
    for rel, npp in (("6.1.0", 40.0), ("6.18.0", 30.0)):
        for i in range(2):
            files.append(synthetic.write(synthetic.make_result(rng=rng, release=rel, walks=4,
                                                               ns_per_pte=npp),
                                         tmp_path / "in" / f"{rel}-{i}.json"))
    md_path, pngs = report.generate(res.load(files), tmp_path / "rep")
    md = md_path.read_text()
    assert "## Across kernels" in md and "| clear_refs/anon | " in md
    assert (tmp_path / "rep" / "kernels_ns_per_entry.png") in pngs


def test_upstream_text_fits_72_columns() -> None:
    for f in (DATA / "sweep" / "cadvisor-shmem-128M.json.gz", SWEEP[0]):
        p = subprocess.run([sys.executable, str(TOOL), "--upstream", str(f)],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        lines = p.stdout.splitlines()
        assert max(len(x) for x in lines) <= 72, max(lines, key=len)
        text = p.stdout
        assert "Kernel:   6.18.44-fc-v595" in text and "CONFIG_PER_VMA_LOCK=y" in text
        assert "Reproducer" in text and "  # ptwalk run --size" in text
        assert "Top kernel symbols" in text
        assert "\t" not in text and "**" not in text


def test_upstream_prints_perf_symbols_when_present(tmp_path: Path) -> None:
    doc = synthetic.read(SWEEP[0])
    doc["perf"] = {"symbols": [{"symbol": "clear_refs_pte_range", "percent": 41.5},
                               {"symbol": "_raw_spin_lock", "percent": 7.25}]}
    f = synthetic.write(doc, tmp_path / "p.json")
    out = render_upstream(res.load([f])[0])
    assert "Top kernel symbols (perf):" in out and " 41.50%  clear_refs_pte_range" in out


def test_report_bad_input() -> None:
    p = subprocess.run([sys.executable, str(TOOL), "/nonexistent"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1


def test_upstream_long_argv_stays_exact_and_narrow(tmp_path: Path) -> None:
    doc = synthetic.read(SWEEP[0])
    doc["argv"] = ["ptwalk", "run", "--size", "2048M", "--dir", "/very/" + "long" * 30 + "/dir",
                   "--out", "/results/vm/6.18/20261121T095308Z/runs/clear_refs-anon-2048M.json"]
    out = render_upstream(res.load([synthetic.write(doc, tmp_path / "r.json")])[0])
    assert max(len(x) for x in out.splitlines()) <= 72
    block = out.split("Reproducer (as root, from a ptwalk build):\n")[1].split("\n\n")[0]
    # what a shell reads: backslash-newline removed, leading "  #" comment marker dropped
    shell = block.replace("\\\n", "").replace("  # ", "", 1)
    assert shell.split() == ["ptwalk", "run", "--size", "2048M", "--dir",
                             "/very/" + "long" * 30 + "/dir", "--out",
                             "clear_refs-anon-2048M.json"]
